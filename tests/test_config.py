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


@pytest.mark.no_compile
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


def test_no_setting_read_outside_the_table():
    """the compiler reads its settings through ic_config.h only: a getenv("TORCHC_...") in
    inductor_c/ is a setting left off the table (and off the cache keys). The on-disk cache's
    location and size (runtime/diskcache.c), the ptxas path and the host statistics are the
    runtime's, not the compiler's."""
    allowed = {"TORCHC_CACHE_DIR", "TORCHC_CACHE_MAX_MB", "TORCHC_DISK_CACHE", "TORCHC_CACHE", "TORCHC_PTXAS",
               "TORCHC_HOST_STATS", "TORCHC_SPIN"}
    found = []
    for base, _, files in os.walk(os.path.join(ROOT, "inductor_c")):
        for fn in files:
            if fn.endswith((".c", ".h")):
                text = open(os.path.join(base, fn)).read()
                found += [(fn, v) for v in re.findall(r'getenv\("(TORCHC_\w+)"\)', text) if v not in allowed]
    assert not found, found
