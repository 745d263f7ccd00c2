"""Real cats (inductor_c/sched/sched.c place_cat): a cat or stack of more than 8 tensors (a tree
of two-operand cats in the graph), or one stored anyway whose operands share a shape, is stored
operand by operand: each operand's body computed and stored into its slice of the output, not a
select among all operands at each element. Differential against eager, captured whole:

- the kernels dump (TORCHC_DEBUG=loops) stores the cat once per non-empty operand and selects
  nothing; a small cat in a pointwise chain stays a select fused into its reader;
- odd sizes, 0-size operands, non-contiguous inputs, mixed dtypes promoted, dims 0/middle/last,
  stack, a cat read by later kernels (a reduction), operands that are extern results (mm) or
  read elsewhere too, nested cats along another dim, gradients through a stacked RNN loop;
- GPU: the graph of a real cat compiles to PTX (graph_to_ptx, sm_90) that ptxas assembles.
"""
import os
import re
import subprocess

import pytest
import torch

import torchc
from conftest import assert_same, captured_whole
from test_gpu_codegen_parallel import SEP, _graph_texts, _ptxas


def _whole(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert captured_whole(ex), str(ex)
    return torchc.compile(fn)(*args)


def _kernels(monkeypatch, capfd, fn, *args):
    """fn compiled and run, with the kernels part of TORCHC_DEBUG=loops"""
    torchc.reset()
    monkeypatch.setenv("TORCHC_DEBUG", "loops")
    capfd.readouterr()
    out = torchc.compile(fn)(*args)
    err = capfd.readouterr().err
    monkeypatch.delenv("TORCHC_DEBUG")
    return out, err.split("=== torchc kernels ===", 1)[1]


def _stores(kernels):
    """how many items store each value, by value"""
    n = {}
    for v in re.findall(r"store (%\d+) ->", kernels):
        n[v] = n.get(v, 0) + 1
    return n


def test_stack_stores_each_operand_once(monkeypatch, capfd):
    def fn(xs):
        return torch.stack([x * (i + 1) for i, x in enumerate(xs)], 1)

    xs = [torch.randn(3, 7) for _ in range(20)]
    out, ks = _kernels(monkeypatch, capfd, fn, xs)
    assert_same(out, fn(xs))
    assert sorted(_stores(ks).values()) == [20], ks[:2000]
    assert "where" not in ks


def test_small_cat_in_a_chain_stays_a_select(monkeypatch, capfd):
    def fn(a, b, c):
        y = torch.cat([a * 0.5, b * 2, c + 1], 1)
        return (y * y).relu() + 1

    args = (torch.randn(5, 3), torch.randn(5, 4), torch.randn(5, 2))
    out, ks = _kernels(monkeypatch, capfd, fn, *args)
    assert_same(out, fn(*args))
    assert list(_stores(ks).values()) == [1], ks[:2000]  # one kernel item: the cat fused


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat_dims_odd_and_empty_operands(dim):
    sizes = [3, 0, 1, 5, 2, 0, 7, 1, 4, 3, 1]

    def fn(xs):
        return torch.cat([x.exp() - 1 for x in xs], dim)

    def shape(s):
        sh = [2, 3, 5]
        sh[dim] = s
        return sh

    xs = [torch.randn(shape(s)) for s in sizes]
    assert_same(_whole(fn, xs), fn(xs))


def test_noncontiguous_and_mixed_dtypes():
    def fn(xs):
        return torch.cat(xs, 1) * 2

    def st(xs):
        return torch.stack(xs) * 2

    base = torch.randn(6, 40)
    xs = [base[:, i::8][:5] if i % 2 else base.t()[i:i + 5, :5] for i in range(6)]  # strided, transposed
    xs += [torch.randint(-5, 5, (5, 3), dtype=torch.int32), torch.randn(5, 2, dtype=torch.float16),
           torch.randn(5, 4, dtype=torch.float64)[:, ::2], torch.ones(5, 1, dtype=torch.bool)]
    assert_same(_whole(fn, xs), fn(xs))
    hs = [torch.randn(2, 3, dtype=torch.bfloat16) for _ in range(6)] + [torch.randn(2, 3, dtype=torch.float16)] * 4
    assert_same(_whole(st, hs), st(hs))  # bf16 with f16: f32


def test_read_by_later_kernels_and_extern_operands():
    def fn(x, w):
        hs = [x @ w]
        for i in range(10):
            hs.append(torch.tanh(hs[-1] @ w + i))
        s = torch.stack(hs, 0)  # operands: mm results and values an mm reads too
        return s.sum(0), s * s.mean(), torch.cat([s, s.flip(0)], 2)  # nested: another dim

    x, w = torch.randn(4, 6), torch.randn(6, 6) * 0.3
    assert_same(_whole(fn, x, w), fn(x, w), rtol=1e-4, atol=1e-5)


def test_stored_anyway_same_shapes(monkeypatch, capfd):
    def fn(a, b):
        y = torch.cat([a.exp(), b.exp()], 0)  # an output, and read again
        return y, y.sum(1)

    args = (torch.randn(33, 17), torch.randn(33, 17))
    out, ks = _kernels(monkeypatch, capfd, fn, *args)
    assert_same(out, fn(*args))
    assert sorted(_stores(ks).values())[-1] == 2, ks[:2000]


def test_rnn_steps_stacked_gradients():
    w = torch.randn(5, 5, requires_grad=True)
    u = torch.randn(5, 5, requires_grad=True)

    def fn(x, h):
        hs = []
        for t in range(x.shape[0]):
            h = torch.tanh(x[t] @ w + h @ u)
            hs.append(h)
        return torch.stack(hs).square().sum()

    x, h = torch.randn(12, 3, 5), torch.randn(3, 5)
    torchc.reset()
    ex = torchc.explain(fn)(x, h)
    assert captured_whole(ex), str(ex)
    got = torchc.compile(fn)(x, h)
    gw, gu = torch.autograd.grad(got, (w, u))
    want = fn(x, h)
    ww, wu = torch.autograd.grad(want, (w, u))
    assert_same(got, want, rtol=1e-4, atol=1e-4)
    assert_same((gw, gu), (ww, wu), rtol=1e-4, atol=1e-4)


def test_real_cat_ptx_assembles(monkeypatch, capfd, tmp_path):
    def fn(xs, a):
        return torch.stack([x * 2 for x in xs], 1).sum(1) + torch.cat([a.exp(), a.sin()], 0).mean()

    xs = [torch.randn(5, 7) for _ in range(12)]
    texts = _graph_texts(monkeypatch, capfd, fn, xs, torch.randn(3, 7))
    assert texts
    ptxas = _ptxas()
    for i, text in enumerate(texts):
        ptx = torchc._C.graph_to_ptx(text, 90)
        assert ".entry" in ptx or ".visible" in ptx
        if ptxas:
            for j, m in enumerate(ptx.split(SEP)):
                f = tmp_path / f"g{i}_{j}.ptx"
                f.write_text(m)
                r = subprocess.run([ptxas, "-arch=sm_90", str(f), "-o", os.devnull], capture_output=True, text=True)
                assert r.returncode == 0, r.stderr[:2000]


def test_dynamic_shapes_many_operands():
    """a symbolic size: the cat stays selects, stored every 8 operands"""
    def fn(xs):
        return torch.cat([x * 2 for x in xs], 0).sum(1) + 1

    cf = torchc.compile(fn, dynamic=True)
    for n in (5, 7):
        xs = [torch.randn(n, 3) for _ in range(20)]
        assert_same(cf(xs), fn(xs))
    xs = [torch.randn(n, 3) for n in range(1, 21)]
    assert_same(cf(xs), fn(xs))


@pytest.mark.parametrize("op", ["cat", "stack"])
def test_parts_stored_by_their_producer(monkeypatch, capfd, op):
    """an operand a kernel stores anyway (an mm reads it): that kernel stores its slice too
    (stack: through the operand's unsqueeze)"""
    def fn(x, w):
        h, hs = x[0], []
        for t in range(x.shape[0]):
            h = torch.tanh(h @ w + x[t])
            hs.append(h)
        return torch.cat(hs, 1) if op == "cat" else torch.stack(hs, 1)

    x, w = torch.randn(10, 4, 5), torch.randn(5, 5) * 0.4
    out, ks = _kernels(monkeypatch, capfd, fn, x, w)
    assert_same(out, fn(x, w))
    cat = re.findall(r"store (%\d+) -> out0", ks)[0]
    blocks = ks.split("\nkernel ")
    shared = [b for b in blocks if f"store {cat} -> out0" in b and re.search(r"store %\d+ -> tmp", b)]
    assert len(shared) >= 9, ks[:3000]
