"""Split columns on the GPU, checked without a GPU (gpu_plan.c gg_choose_split, gpu_rows.c
emit_split / emit_area_combine): reductions that keep few columns contiguous in memory
(vec_outer: x.sum(0) of few columns, BatchNorm's statistics and backward sums over N, H, W in
channels-last) used to run ceil(columns / 32) blocks of 1024 threads, 2 blocks for 64 channels
on a 132-SM GPU. They now cut the reduced extent into parts over many blocks (partials), combine
each pass's partials once in a launch of its own (tcM_kKcP) into a row value area, and the later
passes (the normalizing stores) read the combined values, again over many blocks.

A CPU graph goes through the PTX path (TORCHC_PTX_PROBE, sm_90 with 132 SMs) and
TORCHC_DEBUG=loops prints each launch's plan ("gpu NAME: grid G block B vec V (kK)"); the tests
read the launches of the vec_outer kernel from it."""
import re

import pytest
import torch

import torchc

NSM, SM_THREADS = 132, 2048
LAUNCH = re.compile(r"^gpu (tc\d+_k\d+([pcf]?)(\d*)v?): grid (\d+) block (\d+) vec (\d+) \(k(\d+)\)$")


def _launches(monkeypatch, capfd, tmp_path, fn, *args):
    monkeypatch.setenv("TORCHC_PTX_PROBE", str(tmp_path))
    monkeypatch.setenv("TORCHC_DEBUG", "loops")
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torchc.reset()
    capfd.readouterr()
    with torch.no_grad():
        ex = torchc.explain(torchc.compile(fn))(*args)
    err = capfd.readouterr().err.splitlines()
    probe = [ln for ln in err if "ptx probe" in ln]
    assert probe and all(ln.endswith("ok") for ln in probe), probe
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    vo = {m.group(1) for ln in err if (m := re.match(r"^kernel k(\d+): .* vec_outer$", ln))}
    out = []
    for ln in err:
        m = LAUNCH.match(ln)
        if m and m.group(7) in vo:  # a repeated kernel's launches carry the first's name
            out.append(dict(name=m.group(1), k=m.group(7), kind=m.group(2), pos=m.group(3),
                            grid=int(m.group(4)), block=int(m.group(5))))
    assert out, "no vec_outer kernel in the listing:\n" + "\n".join(err[-80:])
    return ex, out


def _wide(ls):
    """the launches that read the tensor (partials and store passes) fill the device"""
    parts = [L for L in ls if L["kind"] == "p"]
    assert parts, ls
    for L in parts:
        assert L["grid"] >= NSM, L
        assert L["grid"] * L["block"] >= 0.4 * NSM * SM_THREADS, L
    return parts


def _bn_bwd(x, dy, w, mean, rstd):
    """BatchNorm's training backward, written out: two sums per channel, then dx"""
    n = x.shape[0] * x.shape[2] * x.shape[3]
    xhat = (x - mean[None, :, None, None]) * rstd[None, :, None, None]
    sdy = dy.sum((0, 2, 3))
    sdyx = (dy * xhat).sum((0, 2, 3))
    dx = (dy - (sdy / n)[None, :, None, None] - xhat * (sdyx / n)[None, :, None, None]) * \
        (w * rstd)[None, :, None, None]
    return dx, sdy, sdyx


def _bn_fwd(x, w, b):
    m = x.mean((0, 2, 3), keepdim=True)
    v = ((x - m) ** 2).mean((0, 2, 3), keepdim=True)
    return (x - m) * torch.rsqrt(v + 1e-5) * w[None, :, None, None] + b[None, :, None, None], m, v


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_bn_backward_channels_last_fills_the_gpu(dtype, monkeypatch, capfd, tmp_path):
    x = torch.randn(16, 64, 32, 32).to(dtype=dtype, memory_format=torch.channels_last)
    dy = torch.randn_like(x)
    w, mean, rstd = torch.randn(64), torch.randn(64), torch.rand(64) + 0.5
    ex, ls = _launches(monkeypatch, capfd, tmp_path, _bn_bwd, x, dy, w, mean, rstd)
    parts = _wide(ls)
    kinds = [L["kind"] for L in ls]
    # partials of the sums, their combining launch, the dx pass over many blocks, the final
    assert "c" in kinds and "f" in kinds, ls
    assert len({L["pos"] for L in parts}) >= 2, ls  # the store pass is split too
    for L in ls:
        if L["kind"] in "cf":
            assert L["grid"] == 2, L  # one block per 32 channels
    want = _bn_bwd(x, dy, w, mean, rstd)
    for g, e in zip(ex.result, want):
        torch.testing.assert_close(g, e, rtol=2e-2, atol=2e-2)


def test_bn_forward_stats_channels_last(monkeypatch, capfd, tmp_path):
    x = torch.randn(16, 64, 32, 32).to(memory_format=torch.channels_last)
    w, b = torch.randn(64), torch.randn(64)
    ex, ls = _launches(monkeypatch, capfd, tmp_path, _bn_fwd, x, w, b)
    parts = _wide(ls)
    assert len({L["pos"] for L in parts}) >= 2, ls  # mean, then the squares with the mean
    assert sum(L["kind"] == "c" for L in ls) >= 1, ls


@pytest.mark.parametrize("shape", [(131072, 24), (40000, 64), (20000, 100), (131072, 16)])
def test_sum0_few_columns(shape, monkeypatch, capfd, tmp_path):
    x = torch.randn(*shape)
    ex, ls = _launches(monkeypatch, capfd, tmp_path, lambda t: t.sum(0), x)
    _wide(ls)
    torch.testing.assert_close(ex.result, x.sum(0), rtol=1e-4, atol=1e-3)


def test_sixteen_columns_two_passes(monkeypatch, capfd, tmp_path):
    """16 columns (vec_outer's least) take half the lanes of 32-column blocks"""
    x = torch.randn(20000, 16)
    f = lambda t: (t - t.mean(0)) / t.std(0)
    ex, ls = _launches(monkeypatch, capfd, tmp_path, f, x)
    _wide(ls)
    assert {L["kind"] for L in ls} >= {"p", "c"}, ls
    torch.testing.assert_close(ex.result, f(x), rtol=1e-4, atol=1e-4)


def test_many_columns_or_short_extent_stay_unsplit(monkeypatch, capfd, tmp_path):
    """4224 columns are 132 blocks already; an extent of 1000 is a few iterations a thread"""
    for shape in [(512, 4224), (1000, 64)]:
        x = torch.randn(*shape)
        _, ls = _launches(monkeypatch, capfd, tmp_path, lambda t: t.sum(0), x)
        assert all(L["kind"] == "" for L in ls), (shape, ls)


def _graph_to_ptx(text):
    """a printed graph (TORCHC_DEBUG=graph) through ic_graph_parse and ic_graph_to_ptx (sm_90)"""
    import ctypes
    lib = ctypes.CDLL(torchc._C.__file__)  # this interpreter's (a 3.11 and a 3.12 one may sit side by side)

    class Err(ctypes.Structure):
        _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 256), ("t", ctypes.c_double * 4),
                    ("mem_hit", ctypes.c_int)]
    lib.ic_graph_parse.restype = ctypes.c_void_p
    lib.ic_graph_parse.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.ic_graph_to_ptx.restype = ctypes.c_void_p
    lib.ic_graph_to_ptx.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(Err)]
    lib.ic_graph_free.argtypes = [ctypes.c_void_p]
    lib.free.argtypes = [ctypes.c_void_p]
    msg = ctypes.create_string_buffer(512)
    g = lib.ic_graph_parse(text.encode(), msg, 512)
    assert g, msg.value
    e = Err()
    p = lib.ic_graph_to_ptx(g, 90, ctypes.byref(e))
    lib.ic_graph_free(g)
    assert p, e.msg
    ptx = ctypes.string_at(p).decode()
    lib.free(p)
    return ptx


def test_training_backward_graph_plan(monkeypatch, capfd):
    """The backward graph of a channels-last conv + BatchNorm + relu training step (captured on
    the CPU, printed by TORCHC_DEBUG=graph) through the PTX path: its reductions over the 64
    channels (BatchNorm's backward sums over 32*64*64, fused with the dx pass) run their passes
    over many blocks, whichever row form they take."""
    import torch.nn as nn
    monkeypatch.setenv("TORCHC_CACHE", "0")
    monkeypatch.setenv("TORCHC_DEBUG", "graph")
    torchc.reset()
    m = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU())
    m = m.to(memory_format=torch.channels_last)
    x = torch.randn(32, 3, 64, 64).to(memory_format=torch.channels_last)
    capfd.readouterr()
    torchc.compile(m)(x).sum().backward()
    err = capfd.readouterr().err
    graphs = [t.split("=== torchc", 1)[0] for t in err.split("=== torchc graph ===\n")[1:]]
    assert len(graphs) == 2, len(graphs)  # forward, backward
    monkeypatch.setenv("TORCHC_DEBUG", "loops")
    _graph_to_ptx(graphs[1])
    lines = capfd.readouterr().err.splitlines()
    red, cur = set(), None
    for ln in lines:  # reduction kernels keeping the 64 channels
        if (h := re.match(r"^kernel k(\d+): outer \[([\d,]*)\] inner", ln)):
            cur = h.group(1) if h.group(2) and eval(h.group(2).replace(",", "*")) == 64 else None
        elif cur and re.match(r"^  pass \d+: reduce", ln):
            red.add(cur)
    ls = [dict(kind=m.group(2), pos=m.group(3), grid=int(m.group(4)), block=int(m.group(5)))
          for ln in lines if (m := LAUNCH.match(ln)) and m.group(7) in red]
    assert red and ls, "\n".join(lines[-60:])
    _wide(ls)
