import atexit
import os
import random
import shutil
import sys
import tempfile

import pytest
import torch

import torchc

# A private on-disk code cache for this test session (runs never see each other's entries).
if "TORCHC_CACHE_DIR" not in os.environ:
    os.environ["TORCHC_CACHE_DIR"] = tempfile.mkdtemp(prefix="torchc-test-cache-")
    atexit.register(shutil.rmtree, os.environ["TORCHC_CACHE_DIR"], True)


# ---- tests that can fail (issue 24) ------------------------------------------------------
# Every test that calls torchc.compile (or torchc.explain, which compiles), or calls a compiled
# function made before it (a frame went through torchc's hook), must compile at least
# one graph, and none of its frames may fall back to eager (a whole-frame fallback, or the
# recompile limit), unless it is marked as expecting that:
#   @pytest.mark.allow_fallback        fallbacks to eager are what the test expects (unsupported
#                                      constructs, the recompile limit, explain's reasons, ...);
#                                      it must still compile at least one graph
#   @pytest.mark.no_compile            it compiles nothing on purpose, but its frames went
#                                      through torchc's hook (whole-frame fallbacks, disabled
#                                      code): at least one frame must have been seen
#   @pytest.mark.allow_internal_fault  an internal compiler fault is provoked on purpose
#   @pytest.mark.needs_no_compiler     the test compiles nothing and needs no compiler: Python
#                                      API and argument checks, eager references, libraries
#                                      used without compiling (layouts, matrix_exp, manifolds)
# A test that passes with the compiler gone (torchc.compile the identity, torch.compile's
# backend="torchc" eager, torchc.scan's body eager) must be marked needs_no_compiler; every
# other test fails that way (issue 24: `python tools/no_compiler_check.py tests/<files>` makes
# that substitution on `import torchc`, in pytest and in the tests' child processes, and lists
# the tests that pass without being marked).
# An internal compiler fault (torchc._C.stats()["internal_faults"]: IC_EINTERNAL from the
# compiler, an exception inside the capture) fails any test that is not marked for it.
# Counters are read from torchc._C.stats(); torchc.reset() zeroes them, so the reset the test
# makes is wrapped to add them up first.

def pytest_configure(config):
    config.addinivalue_line("markers", "allow_fallback: the test expects frames to fall back to eager")
    config.addinivalue_line("markers", "no_compile: the test calls torchc.compile but compiles nothing on purpose")
    config.addinivalue_line("markers", "allow_internal_fault: the test provokes an internal compiler fault")
    config.addinivalue_line("markers", "needs_no_compiler: the test needs no compiler and compiles nothing")


_COUNTED = ("frames", "compiles", "fallbacks", "limit_fallbacks")
_seen = {"compile_calls": 0}
_acc = dict.fromkeys(_COUNTED, 0)


def _counted_compile(real):
    def compile(*a, **kw):
        _seen["compile_calls"] += 1
        return real(*a, **kw)
    compile.__wrapped__ = real
    compile.__doc__ = real.__doc__
    torchc._C.skip_code(compile.__code__)  # never traced, as torchc's own functions are not
    return compile


torchc.compile = _counted_compile(torchc.compile)
torchc._api.compile = _counted_compile(torchc._api.compile)


def _count_dynamo_backend():
    """torch.compile(backend="torchc") counts as a call of torchc.compile: Dynamo hands each of
    its graphs to torchc._backend.torchc_backend (registered when torch._dynamo is imported,
    from the module's global at that time, or already registered)."""
    from torchc import _backend
    real = _backend.torchc_backend
    _backend.torchc_backend = _counted_compile(real)
    if "torch._dynamo" in sys.modules:
        from torch._dynamo.backends import registry
        if registry._COMPILER_FNS.get("torchc") is real:
            registry._COMPILER_FNS["torchc"] = _backend.torchc_backend


_count_dynamo_backend()
# torchc.scan compiles its body through _scan._compiled (a CompiledFunction of its own)
torchc._scan._compiled = _counted_compile(torchc._scan._compiled)
_real_reset = torchc._api.reset


def _counting_reset():
    s = torchc._C.stats()
    for k in _COUNTED:
        _acc[k] += s.get(k, 0)
    _real_reset()


torchc._C.skip_code(_counting_reset.__code__)
torchc.reset = _counting_reset
torchc._api.reset = _counting_reset


def _check_compiled(item):
    """the failures of the rules above for this test's calls, as a message (None: none)"""
    s = torchc._C.stats()
    n = {k: _acc[k] + s.get(k, 0) for k in _COUNTED}
    faults = s.get("internal_faults", 0) - _seen["faults0"]
    if faults and item.get_closest_marker("allow_internal_fault") is None:
        return (f"{faults} internal compiler fault(s) (last: {torchc._C.last_internal_fault()}); "
                "mark the test allow_internal_fault if it provokes them")
    if item.get_closest_marker("needs_no_compiler") is not None:
        if n["compiles"]:
            return f"marked needs_no_compiler but compiled {n['compiles']} graph(s)"
        return None
    if item.get_closest_marker("no_compile") is not None:
        if not n["frames"]:
            return ("marked no_compile but no frame went through torchc's hook (a test that needs "
                    "no compiler is marked needs_no_compiler)")
        return None
    if not (_seen["compile_calls"] or n["frames"]):
        return None
    if item.get_closest_marker("allow_fallback") is None and (n["fallbacks"] or n["limit_fallbacks"]):
        return (f"{n['fallbacks']} frame(s) fell back to eager and {n['limit_fallbacks']} call(s) hit the "
                "recompile limit (torchc.explain shows why); mark the test allow_fallback if it expects that")
    if not n["compiles"]:
        return "torchc.compile was called but nothing was compiled; mark the test no_compile if that is meant"
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    res = yield
    why = _check_compiled(item)
    if why:
        pytest.fail(why, pytrace=False)
    return res


@pytest.fixture(autouse=True)
def _fresh():
    torchc.reset()
    for k in _COUNTED:
        _acc[k] = 0
    _seen["compile_calls"] = 0
    _seen["faults0"] = torchc._C.stats().get("internal_faults", 0)
    # differential tests sweep many shapes through one function: allow the recompiles
    torchc.config.recompile_limit = 1000
    torch.manual_seed(0)
    random.seed(0)
    before = {n: v for n, (v, src) in torchc.config.changed().items() if src == "set"}
    yield
    # settings a test set from Python do not outlive it: monkeypatch.setattr's undo sets the
    # value it read (the default) from Python, which would then win over a later test's
    # TORCHC_* environment variable
    for n, (v, src) in torchc.config.changed().items():
        if src == "set" and n not in before:
            delattr(torchc.config, n)
        elif src == "set" and before[n] != v:
            setattr(torchc.config, n, before[n])


def assert_same(got, want, rtol=None, atol=None):
    """compiled == eager, recursively, with dtype/shape equality."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"expected a tensor, got {type(got)}"
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert got.shape == want.shape, (got.shape, want.shape)
        kw = {}
        if rtol is not None:
            kw = dict(rtol=rtol, atol=atol)
        elif want.dtype == torch.float32:
            kw = dict(rtol=2e-5, atol=2e-5)
        torch.testing.assert_close(got, want, equal_nan=True, **kw)
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol)
    else:
        assert got == want


def explain_of(fn, *args):
    return torchc.explain(fn)(*args)


def captured_whole(ex):
    """torchc.explain's ex says the call was captured whole: one graph and no break, as
    Dynamo counts them, nothing run eagerly; or, for a call with no tensor op at all (an
    identity: x.to(its own dtype), atleast_1d of a 1-d tensor, a loop over nothing), no graph
    and no break with its pieces captured (Dynamo compiles no graph there either). A frame
    left to eager has no captured piece and is listed in eager_frames: never whole."""
    return (ex.graph_break_count == 0 and not ex.eager_frames and
            (ex.graph_count == 1 or (ex.graph_count == 0 and ex.pieces_run >= 1 and not ex.break_reasons)))
