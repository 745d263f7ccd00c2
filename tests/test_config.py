"""torchc.config: one table of settings (inductor_c/ic_config.h) — settable from Python, the
environment only as an override, every setting that changes code in the cache keys, shown by
explain(); and no setting read from the environment anywhere else in the compiler."""
import os
import re

import pytest
import torch

import torchc
from torchc import _C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _unset():
    yield
    for e in torchc.config.table():
        if e["source"] == "set":
            delattr(torchc.config, e["name"])


@pytest.mark.needs_no_compiler
def test_table_rows():
    rows = torchc.config.table()
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names)) >= 10
    for r in rows:
        assert r["type"] in ("BOOL", "INT", "STR") and r["doc"] and r["env"] == "TORCHC_" + r["name"].upper()
        assert isinstance(r["codegen"], bool)
        assert r["source"] in ("default", "set", r["env"])
    assert {"cse", "gpu_tile", "gemm"} <= {r["name"] for r in rows if r["codegen"]}
    assert "debug" in names and not next(r for r in rows if r["name"] == "debug")["codegen"]


@pytest.mark.needs_no_compiler
def test_set_get_unset_and_validation(monkeypatch):
    c = torchc.config
    monkeypatch.delenv("TORCHC_CSE", raising=False)
    assert c.cse is False and c.source("cse") == "default"
    c.cse = True
    assert c.cse is True and c.source("cse") == "set"
    monkeypatch.setenv("TORCHC_CSE", "0")
    assert c.cse is True  # a value set from Python wins over the environment
    del c.cse
    assert c.cse is False and c.source("cse") == "TORCHC_CSE"
    monkeypatch.setenv("TORCHC_CSE", "1")
    assert c.cse is True
    monkeypatch.setenv("TORCHC_CSE", "maybe")  # does not parse: the default
    assert c.cse is False and c.source("cse") == "default"
    c.compile_threads = 3
    assert c.compile_threads == 3
    c.gemm = "template"
    assert c.gemm == "template"
    for name, bad in [("cse", "yes please"), ("cse", 2), ("compile_threads", -1), ("compile_threads", 10 ** 9),
                      ("compile_threads", 2 ** 70), ("compile_threads", 1.5), ("compile_threads", True),
                      ("gemm", "bogus"), ("gemm", 3), ("gpu_stage", "x" * 100)]:
        with pytest.raises(ValueError):
            setattr(c, name, bad)
    assert c.gemm == "template" and c.compile_threads == 3
    with pytest.raises(AttributeError):
        c.no_such_setting = 1
    with pytest.raises(AttributeError):
        c.no_such_setting
    # the frontend's settings still live beside the table
    c.recompile_limit = 1000
    assert c.recompile_limit == 1000
    assert "cse" in dir(c) and "recompile_limit" in dir(c)
    assert "cse" in repr(c)


def test_codegen_setting_is_in_the_cache_key(monkeypatch, tmp_path):
    # x.var() and x.std(): CSE merges their mean and sum of squares (fewer kernels); the code
    # made with it off must not be reused with it on (a fresh disk cache: nothing from before)
    monkeypatch.setenv("TORCHC_CACHE_DIR", str(tmp_path))
    def f(x):
        return x.var(-1) + x.std(-1)

    x = torch.randn(8, 33)
    want = f(x)

    def run():
        torchc.reset()
        ex = torchc.explain(f)(x)
        torch.testing.assert_close(ex.result, want)
        return ex

    def reused():  # compiles answered by code made before: in memory, loaded in process, on disk
        s = _C.cache_stats()
        return s["mem_hits"] + s["code_shared"] + s["disk_loaded"]

    torchc.config.cse = False
    k_off = run().kernels
    r0 = reused()
    assert run().kernels == k_off
    assert reused() == r0 + 1  # same key: the code is reused
    torchc.config.cse = True
    ex = run()
    assert reused() == r0 + 1  # another key: compiled again
    assert ex.kernels != k_off
    assert "cse=1 (set)" in str(ex)  # explain() shows the settings not at their default


def test_environment_override_reaches_the_compiler(monkeypatch):
    def f(x):
        return x.var(-1) + x.std(-1)

    x = torch.randn(8, 33)
    monkeypatch.setenv("TORCHC_CSE", "0")
    torchc.reset()
    off = torchc.explain(f)(x).kernels
    monkeypatch.setenv("TORCHC_CSE", "1")
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert ex.kernels != off and "TORCHC_CSE" in str(ex)


@pytest.mark.needs_no_compiler
def test_no_setting_read_outside_the_table():
    """torchc reads its settings through ic_config.h only: a getenv("TORCHC_...") in the
    compiler, the frame hook or the extension is a setting left off the table (and off the
    cache keys, torchc.config and explain()). The disk cache's folder and cap, ptxas, the pool's
    spin, host statistics, the PTX probe and the skip list are rows too."""
    allowed = set()
    found = []
    for d in ("inductor_c", "dynamo_hook", "csrc"):
        for base, _, files in os.walk(os.path.join(ROOT, d)):
            for fn in files:
                if fn.endswith((".c", ".h", ".cpp")):
                    text = open(os.path.join(base, fn)).read()
                    found += [(fn, v) for v in re.findall(r'getenv\("(TORCHC_\w+)"\)', text) if v not in allowed]
    assert not found, found
    # and no setting of its own in the Python frontend: every torchc.config name is a row
    assert set(dir(torchc.config)) == {r["name"] for r in torchc.config.table()}


@pytest.mark.needs_no_compiler
def test_frontend_settings_are_rows():
    rows = {r["name"]: r for r in torchc.config.table()}
    for name in ("max_sources", "inline_depth", "max_outputs", "recompile_limit", "num_threads",
                 "automatic_dynamic_shapes", "conv_layout", "dwconv", "dwconv_taps", "sdpa", "conv_out"):
        assert name in rows and not rows[name]["codegen"], name
    assert rows["inline_depth"]["choices"] == "1..128"
    c = torchc.config
    c.max_sources = 1 << 26  # beyond the compiler rows' 0..65536: each INT row has its range
    assert c.max_sources == 1 << 26
    for name, bad in [("max_sources", 0), ("max_sources", (1 << 26) + 1), ("inline_depth", 129),
                      ("recompile_limit", 0), ("num_threads", -1), ("automatic_dynamic_shapes", 1),
                      ("conv_layout", "nchwc"), ("dwconv_taps", 0)]:
        with pytest.raises(ValueError):
            setattr(c, name, bad)


@pytest.mark.allow_fallback
def test_limit_from_the_environment(monkeypatch):
    """TORCHC_INLINE_DEPTH overrides the default at the next capture; explain names it"""
    def leaf(x):
        return x + 1

    def nest(x, d):
        return leaf(x) if d == 0 else nest(x * 1, d - 1)

    def f(x):
        return nest(x, 6)

    x = torch.randn(3)
    del torchc.config.inline_depth
    assert torchc.explain(f)(x).graph_break_count == 0
    monkeypatch.setenv("TORCHC_INLINE_DEPTH", "3")
    assert torchc.config.inline_depth == 3 and torchc.config.source("inline_depth") == "TORCHC_INLINE_DEPTH"
    torchc.reset()
    ex = torchc.explain(f)(x)
    torch.testing.assert_close(ex.result, f(x))
    assert ex.graph_break_count >= 1
    assert any("torchc.config.inline_depth" in r for r in ex.break_reasons), ex.break_reasons
    assert "inline_depth=3 (TORCHC_INLINE_DEPTH)" in str(ex)


@pytest.mark.allow_fallback
def test_recompile_limit_from_the_environment(monkeypatch):
    def f(x):
        return x * 2

    torchc.config.recompile_limit = None  # conftest sets 1000 for every test
    monkeypatch.setenv("TORCHC_RECOMPILE_LIMIT", "2")
    assert torchc.config.recompile_limit == 2
    cf = torchc.compile(f, dynamic=False)
    with pytest.warns(RuntimeWarning, match="recompile limit"):
        for n in range(1, 5):
            torch.testing.assert_close(cf(torch.ones(n)), torch.full((n,), 2.0))
    assert torchc._C.stats()["compiles"] == 2


@pytest.mark.needs_no_compiler
def test_following_torch():
    import torch._dynamo
    c = torchc.config
    c.recompile_limit = None
    old = torch._dynamo.config.recompile_limit
    torch._dynamo.config.recompile_limit = 5
    try:
        assert c.recompile_limit == 5 and c.source("recompile_limit") == "default"
        c.recompile_limit = 7
        assert c.recompile_limit == 7 and "recompile_limit=7 (set)" in torchc._C.config_changed()
    finally:
        torch._dynamo.config.recompile_limit = old
    assert c.num_threads == torch.get_num_threads()
    c.automatic_dynamic_shapes = False
    assert c.automatic_dynamic_shapes is False
    del c.automatic_dynamic_shapes
    assert c.automatic_dynamic_shapes is torch._dynamo.config.automatic_dynamic_shapes


@pytest.mark.needs_no_compiler
@pytest.mark.parametrize("env,value,says", [
    ("TORCHC_CSE", "maybe", "must be a bool"),
    ("TORCHC_NUM_THREADS", "100000", "0..256"),
    ("TORCHC_INLINE_DEPTH", "abc", "1..128"),
    ("TORCHC_GEMM", "fast", "auto|extern|template"),
    ("TORCHC_DEBUG", "1", "graph, loops, llvm, ptx, time, dedupe, all"),
    ("TORCHC_CACHE_MAX_MB", "lots", "positive number"),
    ("TORCHC_CACHE_MAX_MB", "-5", "positive number"),
])
def test_environment_value_that_does_not_parse_is_warned_once(monkeypatch, env, value, says):
    """a TORCHC_* value the setting does not take was ignored silently; now a RuntimeWarning
    names the variable, its value and what is accepted, once per variable and value"""
    from torchc import _config
    monkeypatch.setattr(_config, "_ENV_WARNED", set())
    monkeypatch.setenv(env, value)
    with pytest.warns(RuntimeWarning, match=re.escape(f"{env}={value!r}") + ".*" + re.escape(says)):
        torchc.compile(lambda x: x + 1)
    name = env[len("TORCHC_"):].lower()
    if env not in ("TORCHC_DEBUG", "TORCHC_CACHE_MAX_MB"):  # (those two: their readers ignore it)
        assert torchc.config.source(name) == "default"  # ignored: the default applies
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torchc.compile(lambda x: x + 1)  # once


@pytest.mark.needs_no_compiler
@pytest.mark.parametrize("env,value", [("TORCHC_CSE", "yes"), ("TORCHC_CSE", "0"), ("TORCHC_NUM_THREADS", "4"),
                                       ("TORCHC_GEMM", "extern"), ("TORCHC_DEBUG", "graph,time"),
                                       ("TORCHC_CACHE_MAX_MB", "2e13"), ("TORCHC_CACHE_MAX_MB", "inf"),
                                       ("TORCHC_CACHE_MAX_MB", "0.5"), ("TORCHC_SKIP_MODULES", "foo,bar")])
def test_environment_values_that_parse_are_not_warned(monkeypatch, env, value):
    from torchc import _config
    monkeypatch.setattr(_config, "_ENV_WARNED", set())
    monkeypatch.setenv(env, value)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torchc.compile(lambda x: x + 1)
    assert torchc.config.source(env[len("TORCHC_"):].lower()) == env


@pytest.mark.needs_no_compiler
def test_environment_warning_at_import(tmp_path):
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(torchc.__file__)))
    env = dict(os.environ, PYTHONPATH=root, TORCHC_CACHE_DIR=str(tmp_path), TORCHC_CSE="sometimes")
    p = subprocess.run([sys.executable, "-c", "import torchc"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "TORCHC_CSE='sometimes' is ignored" in p.stderr and p.stderr.count("TORCHC_CSE=") == 1, p.stderr
