"""Indexing, slicing, cat/stack/split, embedding, arange and returned views: compiled vs eager."""
import pytest
import torch
import torch.nn.functional as F

import torchc
from conftest import assert_same, explain_of


def test_basic_indexing_and_views():
    def f(x):
        a = x[:, 1:3] * 2
        b = x[0] + x[..., -1:].sum()
        c = x[None, :, ::2] + 1
        d = x[1, 2] * x[-1]
        e = x[:, None, 1] - x[2:, :][:1]
        return a, b, c, d, e

    cf = torchc.compile(f)
    for x in (torch.randn(4, 5), torch.randn(5, 4).t(), torch.randn(3, 3)):
        assert_same(cf(x), f(x))
    assert explain_of(f, torch.randn(4, 5)).graph_count == 1


def test_data_movement_ops():
    def f(x, idx, emb):
        d = torch.cat([x, x * 2], dim=1).sum(0)
        e = torch.stack((x, x + 1), 0).mean(0)
        g1, g2 = x.chunk(2, dim=1)
        parts = torch.split(x, [1, 3], dim=0)
        h = x[idx]
        i = F.embedding(idx, emb)
        j = torch.arange(4) * 2 + x.argmax(-1)
        k = (x.floor() % 2) // 1 + x.prod(1, keepdim=True)
        return d, e, g1 * g2, parts[1] + 1, h, i, j, k, ~(x > 0), x.narrow(1, 1, 2) + 0, x.select(0, 1) * 1

    cf = torchc.compile(f)
    x = torch.randn(4, 4)
    idx = torch.tensor([0, 2, 1, 3, 3])
    emb = torch.randn(5, 3)
    assert_same(cf(x, idx, emb), f(x, idx, emb))
    ex = explain_of(f, x, idx, emb)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex


@pytest.mark.parametrize("view", ["t", "slice", "select", "getitem_none", "permute", "view", "expand", "narrow"])
def test_returned_views_of_inputs_are_views(view):
    fns = {
        "t": lambda x: x.t(),
        "slice": lambda x: x[:, 1:],
        "select": lambda x: x[1],
        "getitem_none": lambda x: x[None, ..., 0],
        "permute": lambda x: x.permute(1, 0),
        "view": lambda x: x.view(-1),
        "expand": lambda x: x[:, :1].expand(3, 4),
        "narrow": lambda x: x.narrow(0, 1, 2),
    }
    fn = fns[view]
    x = torch.randn(3, 4)
    out = torchc.compile(fn)(x)
    ref = fn(x)
    assert_same(out, ref)
    assert out.data_ptr() == ref.data_ptr() and out.stride() == ref.stride()
    x.add_(1)  # a real view sees the update, as in eager
    assert_same(out, fn(x))


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_index_errors_match_eager():
    def f(x):
        return x[5]

    with pytest.raises(IndexError):
        torchc.compile(f)(torch.randn(3))


def test_factories_and_default_dtype_guard():
    def f(x):
        a = torch.ones(2, x.shape[1]) + x[:2]
        b = torch.zeros((3,)) + 1
        c = torch.full((2, 2), 7) * 2
        d = torch.ones_like(x) * 3 + torch.zeros_like(x, dtype=torch.float64)
        e = torch.full_like(x, 0.5)
        return a, b, c, d, e

    cf = torchc.compile(f)
    x = torch.randn(4, 3)
    assert_same(cf(x), f(x))
    assert explain_of(f, x).graph_count == 1
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert_same(cf(x.double()), f(x.double()))
        assert_same(cf(x), f(x))
    finally:
        torch.set_default_dtype(old)


def test_out_of_range_and_negative_indices_behave_like_eager():
    def f(x, idx, emb):
        return x[idx] * 2, F.embedding(idx.clamp(min=0), emb) if False else F.embedding(idx, emb)

    cf = torchc.compile(f)
    x, emb = torch.randn(4, 3), torch.randn(4, 2)
    good = torch.tensor([0, 3, 1])
    assert_same(cf(x, good, emb), f(x, good, emb))
    bad = torch.tensor([0, 4])
    with pytest.raises((IndexError, RuntimeError)):
        cf(x, bad, emb)
    neg = torch.tensor([-1, 0])

    def g(x, idx):
        return x[idx] + 1

    assert_same(torchc.compile(g)(x, neg), g(x, neg))  # negative wraps in eager: run eagerly


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_computed_index_tensors_are_not_trusted():
    def f(x, idx):
        return x[idx * 2] + 1

    x = torch.randn(5, 2)
    idx = torch.tensor([0, 1, 2])
    assert_same(torchc.compile(f)(x, idx), f(x, idx))
    with pytest.raises(IndexError):
        torchc.compile(f)(x, torch.tensor([3]))


# An embedding on an untaken side of cat reads, at the columns of the other side, offsets
# beyond its row (past the end of its table) or before it (before the table's start); the CPU
# kernel computes both sides and keeps one, so those reads must stay inside the table (a
# fault where the neighbouring page is unmapped: a transformers encoder that concatenates
# three embeddings segfaulted). The tables here sit between PROT_NONE pages: any read outside
# them faults, so the child process dies if one is left unclamped.
_GUARDED_CAT = r"""
import ctypes, mmap, sys, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
import torchc

PAGE = mmap.PAGESIZE
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
keep = []

def guarded(rows, cols):
    # the table ends exactly at a PROT_NONE page and starts right after one
    nbytes = rows * cols * 4
    data_pages = (nbytes + PAGE - 1) // PAGE
    m = mmap.mmap(-1, (data_pages + 2) * PAGE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    keep.append(m)
    start = PAGE + data_pages * PAGE - nbytes  # flush against the guard page after it
    t = torch.frombuffer(m, dtype=torch.float32, count=rows * cols, offset=start).view(rows, cols)
    t.copy_(torch.randn(rows, cols))
    assert libc.mprotect(base, PAGE, 0) == 0
    assert libc.mprotect(base + (data_pages + 1) * PAGE, PAGE, 0) == 0
    return t

def f(ids, a, b, c):
    z = torch.zeros_like(ids)
    return torch.cat([F.embedding(ids, a), F.embedding(z, b), F.embedding(ids % 3, c)], dim=-1) * 2

a, b, c = guarded(37, 1030), guarded(5, 7), guarded(3, 2050)
ids = torch.tensor([[0, 36, 5, 36], [1, 2, 36, 0]])
ex = torchc.explain(f)(ids, a, b, c)
assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
torch.testing.assert_close(ex.result, f(ids, a, b, c), rtol=0, atol=0)
print("OK", ex.graph_count)
"""


def test_cat_of_embeddings_reads_inside_the_tables():
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", _GUARDED_CAT, root], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "OK 1" in r.stdout, (r.returncode, r.stdout[-2000:], r.stderr[-3000:])


# cat read along the vector dim (the innermost, contiguous): each source is read by masked
# vector loads of the lanes inside it (cpu_llvm.c load_unsafe) instead of gathers of clamped
# offsets; lanes of an untaken source at the others' positions must not be read. The sources
# sit flush against PROT_NONE pages (before and after): a read outside one kills the child.
_GUARDED_CAT_LANES = r"""
import ctypes, mmap, sys, torch
sys.path.insert(0, sys.argv[1])
import torchc

PAGE = mmap.PAGESIZE
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
keep = []

def guarded(shape, dtype, at_end):
    n = 1
    for s in shape:
        n *= s
    esz = torch.empty((), dtype=dtype).element_size()
    data_pages = (n * esz + PAGE - 1) // PAGE
    m = mmap.mmap(-1, (data_pages + 2) * PAGE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    keep.append(m)
    start = PAGE + (data_pages * PAGE - n * esz if at_end else 0)
    t = torch.frombuffer(m, dtype=dtype, count=n, offset=start).view(shape)
    src = torch.randn(shape) * 4
    t.copy_(src > 0 if dtype == torch.bool else src.to(dtype))
    assert libc.mprotect(base, PAGE, 0) == 0
    assert libc.mprotect(base + (data_pages + 1) * PAGE, PAGE, 0) == 0
    return t

def f(a, b, c):
    x = torch.cat([a, b, c], 1)
    y = torch.cat([a, c[:, :a.shape[1]]], -1)
    if x.dtype == torch.bool:
        return x, y | x[:, :a.shape[1]].repeat(1, 1, 2)
    if x.dtype.is_floating_point:
        return (x * 2).relu(), x.float().mean(dim=(0, 2)), y - 1
    return x * 3, y - 1

n = 0
for dtype in (torch.float32, torch.bfloat16, torch.float64, torch.int32, torch.bool):
    for w in (1, 16, 17, 33, 64):
        for at_end in (True, False):
            a, b, c = guarded((2, 3, w), dtype, at_end), guarded((2, 1, w), dtype, at_end), guarded((2, 5, w), dtype, at_end)
            g = type(f)(f.__code__.replace(), f.__globals__)  # a code object per case: no recompile limit
            ex = torchc.explain(g)(a, b, c)
            assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count > 0, (dtype, w, str(ex))
            for got, want in zip(ex.result, f(a, b, c)):
                assert got.dtype == want.dtype and got.shape == want.shape, (dtype, w)
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
            n += 1
print("OK", n)
"""


def test_cat_along_the_vector_dim_reads_inside_each_source():
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", _GUARDED_CAT_LANES, root], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "OK 50" in r.stdout, (r.returncode, r.stdout[-2000:], r.stderr[-3000:])
