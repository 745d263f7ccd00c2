"""Split rows in one launch (TORCHC_GPU_SPLIT_FUSE=1|2, an A/B knob, off by default;
gpu_nvptx.c split_fuse, runtime/cuda.c stream_counters): the last partial launch of a split row
kernel counts its blocks in on a per-stream row counter, and the last block of each row
combines the partials and stores, so x.sum() of a huge tensor is one launch instead of two.
Without counters (a stream being captured into a CUDA graph) or with the knob off the final
launch runs as before. Differential tests against eager on
the device: repeated calls (the counters go back to 0), several rows, argmax ties, side
streams, two streams at once, graph capture and replay, the knob off; the counts come from
torchc._C.stats() (split_combined, split_final_launches). Skips without a CUDA device; the PTX
side is in test_ptx_probe.py (test_split_fuse_ptx)."""
import pytest
import torch

import torchc

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _counts():
    s = torchc._C.stats()
    return s["split_combined"], s["split_final_launches"]


def _close(got, want, **tol):
    torch.testing.assert_close(got, want, equal_nan=True, **tol)


@pytest.fixture(params=["1", "2"])
def fresh(request, monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE", "0")
    monkeypatch.setenv("TORCHC_GPU_SPLIT_FUSE", request.param)
    monkeypatch.delenv("TORCHC_GPU_SPLIT_BLOCKS", raising=False)
    torchc.reset()


def test_stats_keys():
    c, f = _counts()
    assert c >= 0 and f >= 0


@cuda
def test_one_launch_and_repeated_calls(fresh, monkeypatch):
    torch.manual_seed(0)
    f = torchc.compile(lambda t: t.sum())
    xs = [torch.randn((1 << 24) + 12345, device="cuda") for _ in range(3)]
    c0, f0 = _counts()
    for i in range(30):  # back to back, no sync: each call relies on the counters being 0 again
        x = xs[i % 3]
        _close(f(x), x.sum(), rtol=1e-4, atol=2e-2)
    c1, f1 = _counts()
    assert c1 - c0 == 30 and f1 == f0, (c0, c1, f0, f1)
    # bitwise the same as the two-launch form (same combining order)
    want = f(xs[0])
    torchc.reset()
    monkeypatch.setenv("TORCHC_GPU_SPLIT_FUSE", "0")
    got = torchc.compile(lambda t: t.sum())(xs[0])
    assert torch.equal(got, want)


@cuda
@pytest.mark.parametrize("rows", [1, 2, 5, 31])
def test_rows_and_reductions(fresh, rows):
    torch.manual_seed(rows)
    x = torch.randn(rows, 3000017 // rows * 4, device="cuda")
    c0, _ = _counts()
    _close(torchc.compile(lambda t: t.sum(-1))(x), x.sum(-1), rtol=1e-4, atol=2e-2)
    _close(torchc.compile(lambda t: (t.amax(-1), t.mean(-1) * 3 + 1))(x), (x.amax(-1), x.mean(-1) * 3 + 1),
           rtol=1e-4, atol=1e-4)
    _close(torchc.compile(lambda t: (t * t).sum(-1).sqrt())(x), (x * x).sum(-1).sqrt(), rtol=1e-4, atol=1e-3)
    assert _counts()[0] > c0


@cuda
def test_arg_ties_and_nan(fresh):
    y = torch.zeros(1 << 23, device="cuda")
    y[(1 << 23) - 5] = 1.0
    y[77] = 1.0  # a tie: the first index wins
    f = torchc.compile(lambda t: (t.argmax(), t.argmin()))
    for _ in range(3):
        _close(f(y), (y.argmax(), y.argmin()))
    z = torch.randn(1 << 23, device="cuda")
    z[(1 << 22) + 3] = float("nan")
    _close(f(z), (z.argmax(), z.argmin()))


@cuda
def test_side_streams_and_two_at_once(fresh):
    torch.manual_seed(1)
    f = torchc.compile(lambda t: t.sum() * 2)
    a = torch.randn(1 << 24, device="cuda")
    b = torch.randn(1 << 24, device="cuda") + 1
    want_a, want_b = a.sum() * 2, b.sum() * 2
    f(a)  # compiled on the current stream
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda.synchronize()
    outs = []
    for _ in range(20):  # both streams run the same kernels at the same time, each its counters
        with torch.cuda.stream(s1):
            outs.append(("a", f(a)))
        with torch.cuda.stream(s2):
            outs.append(("b", f(b)))
    torch.cuda.synchronize()
    for which, o in outs:
        _close(o, want_a if which == "a" else want_b, rtol=1e-4, atol=4e-2)
    _close(f(a), want_a, rtol=1e-4, atol=4e-2)


@cuda
def test_capture_keeps_the_final_launch(fresh):
    x = torch.randn(1 << 24, device="cuda")
    f = torchc.compile(lambda t: t.sum() * 2, mode="reduce-overhead", options={"cudagraph_adaptive": False})
    _, f0 = _counts()
    for _ in range(6):  # compile, two warm-up calls, the capture, replays
        x.copy_(torch.randn(1 << 24, device="cuda"))
        _close(f(x), x.sum() * 2, rtol=1e-4, atol=4e-2)
    assert _counts()[1] == f0 + 1  # the captured call launched the final kernel, only it
    g = torchc.compile(lambda t: t.sum() * 2)  # eager launches on the stream after the replays
    _close(g(x), x.sum() * 2, rtol=1e-4, atol=4e-2)


@cuda
@pytest.mark.parametrize("knob", ["0", None])
def test_knob_off(fresh, monkeypatch, knob):
    if knob is None:
        monkeypatch.delenv("TORCHC_GPU_SPLIT_FUSE")  # the default
    else:
        monkeypatch.setenv("TORCHC_GPU_SPLIT_FUSE", knob)
    torchc.reset()
    x = torch.randn(1 << 24, device="cuda")
    c0, f0 = _counts()
    _close(torchc.compile(lambda t: t.sum())(x), x.sum(), rtol=1e-4, atol=2e-2)
    c1, f1 = _counts()
    assert c1 == c0 and f1 == f0 + 1


@cuda
def test_softmax_of_long_rows_unchanged(fresh):
    """no final launch to fold (the last pass stores the row): no counters"""
    x = torch.randn(2, 4000000, device="cuda") * 4
    c0, _ = _counts()
    _close(torchc.compile(lambda t: torch.softmax(t, -1))(x), torch.softmax(x, -1), rtol=1e-4, atol=1e-9)
    assert _counts()[0] == c0


@cuda
def test_online_pairs_in_one_launch(fresh):
    """var (an online pair: the mean and the squared deviations in one launch, gpu_nvptx.c
    emit_online) with the combining in that launch's last block: eager's values, the final
    launch skipped (not yet run on a GPU when written)"""
    torch.manual_seed(3)
    x = torch.randn(3, 2000003, device="cuda") * 3 + 1
    f = torchc.compile(lambda t: t.var(-1))
    c0, f0 = _counts()
    for _ in range(3):
        got = f(x)
    c1, f1 = _counts()
    assert c1 - c0 == 3 and f1 == f0, (c0, c1, f0, f1)
    _close(got, x.var(-1), rtol=1e-4, atol=1e-6)
    z = torch.randn(1 << 24, device="cuda")
    _close(torchc.compile(lambda t: t.var())(z), z.var(), rtol=1e-4, atol=0)
