"""Computed index tensors on CUDA (positions from a cumsum, relative-position buckets).

No range analysis bounds them, and a check on the host would need a sync each call: the GPU
gather traps on an index out of range, as eager's device-side assert does. Embedding and
index_select, which reject negative indices in eager, have them mapped out of range first.
An out-of-range index kills the CUDA context (in eager too), so those cases run in a child
process and compare how it ends with eager's."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torchc

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pos(mask):
    return (torch.cumsum(mask, dim=1) * mask - 1).long() + 2


def _whole(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    if ex.graph_count != 1 or ex.graph_break_count != 0 or ex.op_count == 0:
        raise AssertionError(f"not one whole graph: {ex.graph_count} graphs, {ex.break_reasons}")
    return ex


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_embedding_of_computed_positions_whole(dtype):
    emb = torch.nn.Embedding(10, 8).cuda().to(dtype)

    def f(mask, w):
        return emb(_pos(mask)) * w

    with torch.no_grad():
        m = torch.ones(3, 7, dtype=torch.long, device="cuda")
        m[1, :3] = 0
        w = torch.randn(8, device="cuda", dtype=dtype)
        _whole(f, m, w)
        cf = torchc.compile(f)
        for mm in (m, m[:, :1], torch.zeros(2, 5, dtype=torch.long, device="cuda")):
            torch.testing.assert_close(cf(mm, w), f(mm, w))


def test_index_select_of_computed_index_whole():
    def f(x, i):
        return torch.index_select(x, 0, (i * 2) % 5) + 1

    x = torch.randn(5, 3, device="cuda")
    i = torch.tensor([0, 4, 1, 3], device="cuda")
    _whole(f, x, i)
    torch.testing.assert_close(torchc.compile(f)(x, i), f(x, i))


def test_embedding_training_computed_positions():
    emb = torch.nn.Embedding(12, 6).cuda()
    lin = torch.nn.Linear(6, 2).cuda()

    def f(mask):
        return lin(emb(_pos(mask))).sum()

    m = torch.ones(2, 9, dtype=torch.long, device="cuda")
    m[0, :4] = 0
    ex = torchc.explain(f)(m)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    cf = torchc.compile(f)
    torchc.reset()
    got = cf(m)
    got.backward()
    g1 = emb.weight.grad.clone()
    emb.weight.grad = None
    lin.weight.grad = None
    lin.bias.grad = None
    want = f(m)
    want.backward()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(g1, emb.weight.grad)


_CHILD = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, {root!r})
    import torchc
    emb = torch.nn.Embedding(10, 4).cuda()
    def f(mask, off):
        return emb((torch.cumsum(mask, dim=1) * mask).long() + off) * 2
    fn = torchc.compile(f) if sys.argv[1] == "torchc" else f
    m = torch.ones(2, 6, dtype=torch.long, device="cuda")
    with torch.no_grad():
        fn(m, 0)
        torch.cuda.synchronize()
        print("ok-in-range", flush=True)
        try:
            fn(m, int(sys.argv[2]))
            torch.cuda.synchronize()
            print("no-error", flush=True)
        except RuntimeError as e:
            print("raised", flush=True)
""")


@pytest.mark.parametrize("off", [8, -7])
def test_out_of_range_ends_as_eager(off):
    # positions 1..6 + 8 pass the table's 10 rows; - 7 gives negatives (eager asserts, no wrap)
    code = _CHILD.format(root=ROOT)
    outs = []
    for system in ("eager", "torchc"):
        r = subprocess.run([sys.executable, "-c", code, system, str(off)], capture_output=True, text=True, timeout=120)
        outs.append(r.stdout.split())
    for o in outs:
        assert o[:1] == ["ok-in-range"], outs
        assert "no-error" not in o, outs
