"""torchc.compile(..., mode="reduce-overhead"): CUDA graphs (torchc/_cudagraphs.py).

Differential tests against eager; the GPU ones skip without a CUDA device, the fallback
and probe tests run everywhere."""
import pytest
import torch

import torchc
from torchc import _C

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _events(fn, *args):
    return [e["event"] for e in torchc.explain(fn)(*args).cudagraphs]


def _ro(f):
    """reduce-overhead that always replays (no adaptive choice by host time)."""
    return torchc.compile(f, mode="reduce-overhead", options={"cudagraph_adaptive": False})


def _until_replayed(cf, *args, limit=8):
    evs, reasons = [], set()
    for _ in range(limit):
        cg = torchc.explain(cf)(*args).cudagraphs
        evs.append([e["event"] for e in cg])
        reasons.update(str(e.get("reason")) for e in cg if e.get("reason"))
        if evs[-1] == ["replayed"]:
            return evs
    raise AssertionError(f"never replayed: {evs}; reasons: {sorted(reasons)}{_sync_site(cf, args)}")


def _sync_site(cf, args):
    """where a call synchronizes: one more call with torch's sync debug mode set to error"""
    prev = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        cf._call(*args)
    except Exception:
        import traceback
        return "\nsynchronizing call:\n" + traceback.format_exc()[-3000:]
    finally:
        torch.cuda.set_sync_debug_mode(prev)
    return "\n(a call under sync debug mode 'error' did not raise)"


def test_probe_follows_guards():
    scale = {"v": 2.0}

    def f(x, k=1.0):
        return x * k + 1

    cf = torchc.compile(f)
    x = torch.randn(5)
    assert _C.probe(f, (x,), None) is None  # nothing compiled yet
    cf(x)
    e = _C.probe(f, (x,), None)
    assert isinstance(e, int)
    assert _C.probe(f, (x, 1.0), None) in (e, None)
    assert _C.probe(f, (torch.randn(6),), None) is None  # shape guard fails
    assert _C.probe(f, (x.double(),), None) is None
    with pytest.raises(TypeError):
        _C.probe(f, [x])
    assert _C.probe(len, (x,), None) is None  # not a Python function
    del scale


def test_reduce_overhead_on_cpu_runs_normally():
    def f(x, y):
        return torch.relu(x * y) + 1

    cf = _ro(f)
    x, y = torch.randn(7, 3), torch.randn(7, 3)
    for _ in range(3):
        torch.testing.assert_close(cf(x, y), f(x, y))
    ex = torchc.explain(cf)(x, y)
    assert [e["event"] for e in ex.cudagraphs] == ["fallback"]
    assert "CUDA" in ex.cudagraphs[0]["reason"]


@cuda
def test_replay_matches_eager_with_changing_values():
    def f(x, y):
        return (torch.sigmoid(x) * y).sum(-1), x - y

    cf = _ro(f)
    shapes = [(33, 17)] * 4 + [(1, 1)] * 3 + [(33, 17)] * 2 + [(0, 4)] * 3
    for i, s in enumerate(shapes):
        x = torch.randn(s, device="cuda")
        y = torch.randn(s, device="cuda")
        got = cf(x, y)
        want = f(x, y)
        torch.testing.assert_close(got, want)
    # both shapes replay, back and forth: each (entry, signature) key keeps its own graph
    for s in [(33, 17), (1, 1), (33, 17), (1, 1)]:
        x, y = torch.randn(s, device="cuda"), torch.randn(s, device="cuda")
        evs = _until_replayed(cf, x, y)
        assert not any("synchronizes" in str(e) for e in evs)
        ex = torchc.explain(cf)(x, y)
        assert [e["event"] for e in ex.cudagraphs] == ["replayed"]
        torch.testing.assert_close(ex.result, f(x, y))


_FRESH = r"""
import torch, torchc
def f(x, y):
    return (torch.sigmoid(x) * y).sum(-1), x - y
cf = torchc.compile(f, mode="reduce-overhead", options={"cudagraph_adaptive": False})
x, y = torch.randn(33, 17, device="cuda"), torch.randn(33, 17, device="cuda")
evs = [[e["event"] for e in torchc.explain(cf)(x, y).cudagraphs] for _ in range(5)]
reasons = [e["reason"] for e in cf.events if e["reason"]]
print(evs, reasons)
assert evs[-1] == ["replayed"] and ["captured"] in evs, (evs, reasons)
"""


@cuda
def test_first_key_of_a_process_replays():
    """torch warns once per process when the sync debug mode is first set ("Synchronization
    debug mode is a prototype feature ... synchronizing operations"): the first key warmed in
    a process was read as synchronizing and never captured. A fresh process shows it."""
    import os
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]


class _FakeSyncMode:
    """torch.cuda's get/set_sync_debug_mode as torch 2.11 behaves, without a device: the first
    set of a process warns that the mode is a prototype (TORCH_WARN_ONCE)."""

    def __init__(self):
        self.mode, self.warned = 0, False

    def get(self):
        return self.mode

    def set(self, m):
        import warnings
        if not self.warned and m not in (0, "default"):
            self.warned = True
            warnings.warn("Synchronization debug mode is a prototype feature and does not yet detect all "
                          "synchronizing operations (Triggered internally at torch/csrc/cuda/Module.cpp:1003.)")
        self.mode = m


@pytest.mark.needs_no_compiler
def test_warm_up_reads_only_synchronizing_operations(monkeypatch):
    """runs everywhere: the warm-up's classification of the warnings of a call"""
    import warnings
    from torchc import _cudagraphs
    fake = _FakeSyncMode()
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", fake.get)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", fake.set)
    said = []

    def call(kind):
        if kind == "sync":
            warnings.warn("called a synchronizing CUDA operation (Triggered internally at "
                          "c10/cuda/CUDAFunctions.cpp:154.)")
        elif kind == "other":
            warnings.warn("something else", UserWarning)
        said.append(fake.mode)
        return kind

    g = _cudagraphs.CUDAGraphed(call, call, adaptive=False)
    w = [0, float("inf"), None]
    assert g._warm_call(w, ("none",), {}) == "none"  # the prototype warning of the first set
    assert w[2] is None and fake.warned and said == ["warn"] and fake.mode == 0
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        g._warm_call(w, ("other",), {})
    assert w[2] is None and [str(r.message) for r in rec] == ["something else"]  # passed on
    g._warm_call(w, ("sync",), {})
    assert w[2] is not None and "synchronizes" in w[2]
    assert w[1] < float("inf")


@cuda
def test_outputs_are_static_and_overwritten_like_torch():
    def f(x):
        return x * 2

    cf = _ro(f)
    x = torch.randn(16, device="cuda")
    evs = _until_replayed(cf, x)
    assert ["captured"] in evs and evs[0] == ["warmup"]
    a = cf(x)
    a_val = a.clone()
    b = cf(x + 1)
    assert b.data_ptr() == a.data_ptr()  # torch's semantics: the next replay overwrites
    torch.testing.assert_close(b, (x + 1) * 2)
    torch.testing.assert_close(a_val, x * 2)


@cuda
def test_non_contiguous_broadcast_and_bf16():
    def f(x, b):
        return (x.t() + b).to(torch.float32).softmax(-1)

    cf = _ro(f)
    for _ in range(6):
        x = torch.randn(64, 48, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(64, device="cuda", dtype=torch.bfloat16)
        torch.testing.assert_close(cf(x, b), f(x, b), rtol=2e-2, atol=2e-2)


@cuda
def test_guard_failure_recaptures():
    k = [2.0]

    def f(x):
        return x * k[0]

    cf = _ro(f)
    x = torch.randn(8, device="cuda")
    _until_replayed(cf, x)
    torch.testing.assert_close(cf(x), x * 2.0)
    k[0] = 3.0  # the guard on k[0] fails: recompile, warm-up, new graph
    torch.testing.assert_close(cf(x), x * 3.0)
    _until_replayed(cf, x)
    for _ in range(2):
        torch.testing.assert_close(cf(x), x * 3.0)
    k[0] = 2.0
    torch.testing.assert_close(cf(x), x * 2.0)


@cuda
def test_inplace_argument_update_is_copied_back():
    def f(x, y):
        x.add_(y)
        return x * 2

    cf = _ro(f)
    for _ in range(6):
        x = torch.randn(10, device="cuda")
        y = torch.randn(10, device="cuda")
        x0 = x.clone()
        out = cf(x, y)
        torch.testing.assert_close(x, x0 + y)
        torch.testing.assert_close(out, (x0 + y) * 2)


@cuda
def test_aliasing_output_and_capture_failure_fall_back():
    def ident(x):
        return x, x + 1

    cf = _ro(ident)
    x = torch.randn(4, device="cuda")
    for _ in range(5):
        a, b = cf(x)
        assert a is x or a.data_ptr() == x.data_ptr()
        torch.testing.assert_close(b, x + 1)

    def sync(x):
        y = x + 1
        if y.sum().item() > 0:  # graph break on a data-dependent branch: .item() syncs
            return y * 2
        return y * 3

    cs = _ro(sync)
    for v in (1.0, -1.0) * 5:
        x = torch.full((5,), v, device="cuda")
        torch.testing.assert_close(cs(x), sync(x))
    ex = torchc.explain(cs)(torch.ones(5, device="cuda"))
    assert ex.cudagraphs[0]["event"] == "fallback" and "synchronizes" in ex.cudagraphs[0]["reason"]
    # never captured: torch's CUDA generator is not left in capture mode
    assert torch.randn(3, device="cuda").shape == (3,)


@cuda
def test_module_with_matmul_and_param_update():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).cuda()
    cm = torchc.compile(m, mode="reduce-overhead", options={"cudagraph_adaptive": False})
    with torch.no_grad():
        for _ in range(6):
            x = torch.randn(5, 32, device="cuda")
            torch.testing.assert_close(cm(x), m(x), rtol=1e-4, atol=1e-4)
        m[0].weight.mul_(0.5)  # in place: the graph reads the same memory
        x = torch.randn(5, 32, device="cuda")
        torch.testing.assert_close(cm(x), m(x), rtol=1e-4, atol=1e-4)
        m[2].weight = torch.nn.Parameter(torch.randn(8, 64, device="cuda"))  # replaced
        for _ in range(5):
            x = torch.randn(5, 32, device="cuda")
            torch.testing.assert_close(cm(x), m(x), rtol=1e-4, atol=1e-4)
    x = torch.randn(5, 32, device="cuda")
    ex = torchc.explain(cm)(x)  # grad mode with parameters requiring grad: normal run
    assert ex.cudagraphs[0]["event"] == "fallback"
    torch.testing.assert_close(ex.result, m(x), rtol=1e-4, atol=1e-4)


@cuda
def test_reset_drops_graphs():
    def f(x):
        return x.cos()

    cf = _ro(f)
    x = torch.randn(3, device="cuda")
    _until_replayed(cf, x)
    torchc.reset()
    assert _events(cf, x) == ["warmup"]
    torch.testing.assert_close(cf(x), x.cos())


@cuda
def test_adaptive_choice_is_correct_either_way():
    def f(x, y):
        return x * y + 1

    cf = torchc.compile(f, mode="reduce-overhead")
    seen = set()
    for i in range(12):
        x, y = torch.randn(9, device="cuda"), torch.randn(9, device="cuda")
        ex = torchc.explain(cf)(x, y)
        torch.testing.assert_close(ex.result, f(x, y))
        seen.update(e["event"] for e in ex.cudagraphs)
        for e in ex.cudagraphs:
            if e["event"] == "fallback":
                assert "faster" in e["reason"]
    assert "captured" in seen


@cuda
def test_stream_capture_predicate_guard_holds_during_capture():
    """transformers asks torch.cuda.is_current_stream_capturing() (guarded): torchc's own
    capture of a call traced as not capturing records the same path, no recompile"""
    def f(x):
        try:
            capturing = torch.cuda.is_current_stream_capturing()
        except Exception:
            capturing = False
        return x * 2 + (0 if capturing else 1)

    x = torch.randn(64, device="cuda")
    cf = _ro(f)
    _until_replayed(cf, x)
    torch.testing.assert_close(cf(x), f(x))


_REAL_MODE = r"""
import warnings, torch
from torchc import _cudagraphs
modes = {"default": 0, "warn": 1, "error": 2}
torch.cuda.get_sync_debug_mode = torch._C._cuda_get_sync_debug_mode
torch.cuda.set_sync_debug_mode = lambda m: torch._C._cuda_set_sync_debug_mode(modes.get(m, m))
g = _cudagraphs.CUDAGraphed(lambda: 1, lambda: 1, adaptive=False)
w = [0, float("inf"), None]
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    g._warm_call(w, (), {})  # the first set of this process: torch's prototype warning
assert w[2] is None, w
assert not rec, [str(r.message) for r in rec]
print("ok")
"""


@pytest.mark.skipif(not hasattr(torch._C, "_cuda_set_sync_debug_mode"), reason="torch built without CUDA")
def test_warm_up_with_torchs_own_sync_mode_warning():
    """the real text of torch's once-per-process warning (a CUDA build of torch; no device
    needed): a fresh process's first warm-up is not read as synchronizing"""
    import os
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", _REAL_MODE], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr[-3000:]
