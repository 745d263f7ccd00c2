"""Updates of inputs stored by the kernels straight into the tensors (issue 22, deliverable 7;
inductor_c/sched/inplace.c, dynamo_hook/train_inplace_store.c).

Every test compares with eager (values of the results and of every updated tensor, version
counters) and asserts how many updates were stored in place and how many copied back
(explain's inplace_updates / copied_updates), so a silent fallback to the copy-back, or an
in-place store where it would be wrong, fails."""
import copy
import os
import shutil
import subprocess

import pytest
import torch
import torch.nn as nn

import torchc

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _check(f, make, inplace, copied, n=3, graphs=1):
    """f run n times eagerly and compiled on twin inputs: results, the inputs and their
    versions equal; explain's counts of in-place and copied updates as given"""
    cf = torchc.compile(f)
    xe, xc = make(), make()
    for _ in range(n):
        re_, rc = f(*xe), cf(*xc)
        torch.testing.assert_close(rc, re_)
    for a, b in zip(xe, xc):
        if isinstance(a, torch.Tensor):
            torch.testing.assert_close(b, a)
            assert b._version == a._version, (b._version, a._version)
    ex = torchc.explain(f)(*make())
    assert (ex.graph_count, ex.graph_break_count) == (graphs, 0), ex.break_reasons
    assert (ex.inplace_updates, ex.copied_updates) == (inplace, copied), str(ex)
    return ex


def _pg(*shape, k=2, dtype=torch.float32, device="cpu"):
    def make():
        g = torch.Generator().manual_seed(0)
        return tuple(torch.randn(*shape, generator=g, dtype=dtype).to(device) for _ in range(k))
    return make


def test_sgd_like_update_stored_in_place():
    def f(p, g, buf):
        buf.mul_(0.9).add_(g)
        p.add_(buf, alpha=-0.1)
    ex = _check(f, _pg(64, 33, k=3), 2, 0)
    assert "-> in0" in ex.kernels[0] and "-> in2" in ex.kernels[0], ex.kernels[0]


def test_parameter_storage_kept_and_versions_as_eager():
    """the kernel writes into the parameter's own storage (no new tensor, no copy); the
    version counter moves by eager's count of in-place ops (3 here, 1 for g)"""
    def f(p, g):
        p.mul_(0.5)
        p.add_(g)
        p.sub_(1.0)
        g.zero_()
    make = _pg(1000)
    p, g = make()
    ptr, v0, gv0 = p.data_ptr(), p._version, g._version
    torchc.compile(f)(p, g)
    pe, ge = make()
    f(pe, ge)
    torch.testing.assert_close(p, pe)
    assert p.data_ptr() == ptr and p._version - v0 == 3 and g._version - gv0 == 1
    ex = torchc.explain(f)(*make())
    assert (ex.inplace_updates, ex.copied_updates) == (2, 0)  # g read (by p's update) first


def test_unread_input_overwritten_is_copied_back():
    """an input the graph never reads is not covered by the distinct-inputs guard: copied"""
    def f(p, q):
        q.fill_(2.0)
        p.add_(1.0)
    _check(f, _pg(10), 1, 1)


def test_value_read_after_the_update():
    def f(p, g):
        p.add_(g)
        return p * 2, (p + 1).sum()
    _check(f, _pg(17, 5), 1, 0)


def test_old_value_read_in_the_same_kernel():
    def f(p, g):
        old = p * 3
        p.add_(g)
        return old
    _check(f, _pg(40, 7), 1, 0)


def test_old_value_read_by_a_reduction():
    def f(p, g):
        s = p.sum(1)
        p.add_(g)
        return s
    cf = torchc.compile(f)
    a, b = _pg(40, 70)(), _pg(40, 70)()
    torch.testing.assert_close(cf(*b), f(*a))
    torch.testing.assert_close(b[0], a[0])
    ex = torchc.explain(f)(*_pg(40, 70)())
    assert ex.graph_count == 1 and ex.inplace_updates + ex.copied_updates == 1


@pytest.mark.parametrize("how", ["t", "flip", "roll", "shift"])
def test_other_element_read_is_copied_back(how):
    """the new value reads the old one at another element: storing in place would read
    elements already written: copied back"""
    def f(p):
        if how == "t":
            p.copy_(p.t() * 2 + 1)
        elif how == "flip":
            p.copy_(p.flip(0) - p)
        elif how == "roll":
            p.copy_(p.roll(1, 1))
        else:
            p[1:] = p[:-1] + 1
    _check(f, _pg(9, 9, k=1), 0, 1)


def test_update_broadcast_in_a_larger_loop():
    """p's update fused beside a value of a larger shape: stored once per element or copied"""
    def f(p, g):
        p.add_(1.0)
        return p + g
    make = lambda: (torch.randn(33), torch.randn(8, 33))  # noqa: E731
    torch.manual_seed(0)
    a = make()
    b = tuple(x.clone() for x in a)
    torch.testing.assert_close(torchc.compile(f)(*b), f(*a))
    torch.testing.assert_close(b[0], a[0])


def test_view_of_parameter_updated():
    """an update through a view of the input (the whole input is rewritten in place)"""
    def f(p, g):
        p[:, 1:3].add_(g)
        p[0].mul_(2)
    make = lambda: (torch.arange(24.0).reshape(4, 6), torch.ones(4, 2))  # noqa: E731
    _check(f, make, 0, 1)  # the new value is a cat of the parts, whose branches read elsewhere


def test_non_contiguous_input_updated_in_place():
    base_e, base_c = torch.randn(8, 12), None
    base_c = base_e.clone()

    def f(p, g):
        p.mul_(0.5).add_(g)
    g = torch.randn(8, 6)
    cf = torchc.compile(f)
    for _ in range(2):
        f(base_e[:, ::2], g)
        cf(base_c[:, ::2], g)
    torch.testing.assert_close(base_c, base_e)  # the other columns untouched
    ex = torchc.explain(f)(base_c[:, ::2], g)
    assert (ex.inplace_updates, ex.copied_updates) == (1, 0)


@pytest.mark.allow_fallback
def test_aliased_inputs_decided_by_eager():
    """a view of the updated input passed as another argument: not compiled together"""
    def f(p, q):
        p.add_(1.0)
        return q * 2
    a = torch.randn(6, 6)
    b = a.clone()
    cf = torchc.compile(f)
    cf(torch.randn(6, 6), torch.randn(6))  # compiled for distinct tensors: the guard refuses views
    r = cf(b, b[1])
    torch.testing.assert_close(r, f(a, a[1]))
    torch.testing.assert_close(b, a)


@pytest.mark.allow_fallback
def test_unread_update_beside_a_read_one():
    """q is overwritten (not read), p read and updated: an overlapping q must not reach the
    compiled graph (the distinct-inputs guard checks the pair)"""
    def f(p, q):
        q.fill_(3.0)
        p.add_(1.0)
    a = torch.zeros(10)
    b = a.clone()
    cf = torchc.compile(f)
    cf(torch.zeros(10), torch.zeros(10))
    f(a[:6], a[4:])
    cf(b[:6], b[4:])
    torch.testing.assert_close(b, a)


def test_old_value_copied_into_another_update():
    """a takes b's old value (a kernel reads b there, before b's own update is stored)"""
    def f(a, b):
        a.copy_(b)
        b.add_(1.0)
    _check(f, _pg(5, 4), 1, 1)


def test_index_checked_graph_copies_back():
    """a computed index is checked after the kernels (an out-of-range one reruns eagerly,
    which must see the inputs untouched): never stored in place"""
    def f(p, x, i):
        p.add_(x[i % 7 + 0 * i.max()])
    def make():
        g = torch.Generator().manual_seed(0)
        return torch.randn(3, generator=g), torch.randn(7, generator=g), torch.tensor([1, 2, 5])
    cf = torchc.compile(f)
    a, b = make(), make()
    f(*a)
    cf(*b)
    torch.testing.assert_close(b[0], a[0])
    ex = torchc.explain(f)(*make())
    assert ex.graph_count == 1 and (ex.inplace_updates, ex.copied_updates) == (0, 1), str(ex)


def test_half_parameter_float_update():
    def f(p, g):
        p.add_(g.float() * 0.5)
    _check(f, _pg(31, dtype=torch.bfloat16), 1, 0)


def test_leaf_requiring_grad_under_no_grad():
    """torch.optim's pattern: a leaf that requires grad updated in place under no_grad; a
    backward that saved it raises eager's error afterwards"""
    def upd(p, g):
        p.add_(g, alpha=-0.1)
    w_e = nn.Parameter(torch.randn(5, 5))
    w_c = nn.Parameter(w_e.detach().clone())
    x = torch.randn(3, 5)
    cu = torchc.compile(upd)
    outs = []
    for w, u in ((w_e, upd), (w_c, cu)):
        y = (w * w).sum() + (x @ w).sum()  # saves w
        with torch.no_grad():
            u(w, torch.ones(5, 5))
        assert w.requires_grad and w.is_leaf and w.grad is None
        with pytest.raises(RuntimeError) as ei:
            y.backward()
        outs.append(str(ei.value).split(";")[0][:60])
    assert outs[0] == outs[1]
    torch.testing.assert_close(w_c, w_e)
    with torch.no_grad():
        ex = torchc.explain(upd)(w_c, torch.ones(5, 5))
    assert (ex.inplace_updates, ex.copied_updates) == (1, 0)


@pytest.mark.parametrize("name", ["sgd", "adamw"])
def test_optimizer_state_in_place(name):
    """torch.optim's step compiled: every parameter and state tensor stored in place, values
    and per-step version increments as eager's"""
    torch.manual_seed(0)
    m_e = nn.Sequential(nn.Linear(6, 9), nn.ReLU(), nn.Linear(9, 2))
    m_c = copy.deepcopy(m_e)
    mk = {"sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3),
          "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2)}[name]
    o_e, o_c = mk(m_e.parameters()), mk(m_c.parameters())
    step = torchc.compile(o_c.step)
    for p, q in zip(m_e.parameters(), m_c.parameters()):
        p.grad = torch.randn_like(p)
        q.grad = p.grad.clone()
    def versions(m, o):
        return [p._version for p in m.parameters()] + [
            t._version for p in m.parameters() for k, t in sorted(o.state[p].items()) if k != "step"]
    for i in range(4):
        ve, vc = versions(m_e, o_e), versions(m_c, o_c)
        o_e.step()
        ex = torchc.explain(step)()
        if i >= 1:  # after the first step (state created), increments equal
            de = [a - b for a, b in zip(versions(m_e, o_e), ve)]
            dc = [a - b for a, b in zip(versions(m_c, o_c), vc)]
            assert de == dc and min(de) > 0, (de, dc)
            nstate = 2 if name == "adamw" else 1
            assert (ex.inplace_updates, ex.copied_updates) == (4 * (1 + nstate), 0), str(ex)
        for p, q in zip(m_e.parameters(), m_c.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)
            for k in o_e.state[p]:
                torch.testing.assert_close(o_c.state[q][k], o_e.state[p][k], rtol=1e-5, atol=1e-6)


def test_sgd_step_kernel_count_unchanged():
    """the in-place SGD step is still one kernel per shape group and stores nothing apart"""
    torch.manual_seed(0)
    p = [torch.randn(100, requires_grad=True), torch.randn(7, 3, requires_grad=True)]
    for t in p:
        t.grad = torch.randn_like(t)
    opt = torch.optim.SGD(p, lr=0.1, momentum=0.9)
    step = torchc.compile(opt.step)
    step()
    ex = torchc.explain(step)()
    assert ex.inplace_updates == 4 and ex.copied_updates == 0
    assert " out" not in " ".join(ex.kernels).replace("outer", ""), ex.kernels


def _ptxas():
    for c in (os.environ.get("CUDA_HOME", "") + "/bin/ptxas", "/usr/local/cuda/bin/ptxas", shutil.which("ptxas")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def test_inplace_graphs_generate_ptx(monkeypatch, capfd, tmp_path):
    """the GPU path of in-place graphs (NVPTX, sm_90) without a GPU: PTX generated for every
    graph, and assembled by ptxas where it exists"""
    monkeypatch.setenv("TORCHC_PTX_PROBE", str(tmp_path))
    torchc.reset()

    def f(p, g, buf):
        buf.mul_(0.9).add_(g)
        p.add_(buf, alpha=-0.1)
        return (p * 2).sum()
    with torch.no_grad():
        torchc.compile(f)(*_pg(64, 33, k=3)())
        torchc.compile(f)(*_pg(5, 3, k=3, dtype=torch.bfloat16)())
    lines = [ln for ln in capfd.readouterr().err.splitlines() if "ptx probe" in ln]
    assert lines and all(ln.endswith("ok") for ln in lines), lines
    ptxas = _ptxas()
    files = sorted(tmp_path.glob("*.ptx"))
    assert files
    if ptxas:
        for p in files:
            r = subprocess.run([ptxas, "-arch=sm_90", str(p), "-o", os.devnull], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr[:2000]


@cuda
@pytest.mark.parametrize("name", ["sgd", "adamw"])
def test_cuda_optimizer_state_in_place(name):
    torch.manual_seed(0)
    m_e = nn.Sequential(nn.Linear(64, 96), nn.ReLU(), nn.Linear(96, 8)).cuda()
    m_c = copy.deepcopy(m_e)
    mk = {"sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3),
          "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2)}[name]
    o_e, o_c = mk(m_e.parameters()), mk(m_c.parameters())
    step = torchc.compile(o_c.step)
    for i in range(5):
        for p, q in zip(m_e.parameters(), m_c.parameters()):
            p.grad = torch.randn_like(p)
            q.grad = p.grad.clone()
        o_e.step()
        ex = torchc.explain(step)()
        for p, q in zip(m_e.parameters(), m_c.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)
            for k in o_e.state[p]:
                torch.testing.assert_close(o_c.state[q][k], o_e.state[p][k], rtol=1e-5, atol=1e-6)
    assert ex.inplace_updates >= 4 and ex.copied_updates == 0, str(ex)


@cuda
def test_cuda_update_patterns():
    for f, k, inplace in [(lambda p, g: (p.mul_(0.9).add_(g), None)[1], 2, 1),
                          (lambda p, g: (p.copy_(p.t() + g), None)[1], 2, 0)]:
        g = torch.Generator().manual_seed(0)
        a = tuple(torch.randn(32, 32, generator=g).cuda() for _ in range(k))
        b = tuple(x.clone() for x in a)
        cf = torchc.compile(f)
        for _ in range(3):
            f(*a)
            cf(*b)
        torch.testing.assert_close(b[0], a[0])
        ex = torchc.explain(f)(*b)
        assert ex.inplace_updates == inplace, str(ex)


def test_graph_text_round_trips_in_place_outputs():
    """`output j = %v into=i` is part of the graph text (the cache key): parse(print(g)) == g"""
    import ctypes
    lib = ctypes.CDLL(torchc._C.__file__)
    lib.ic_test_graph_roundtrip.argtypes = [ctypes.c_int]
    lib.ic_test_graph_roundtrip_stats.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_char_p, ctypes.c_size_t]
    lib.ic_test_graph_roundtrip_stats.restype = ctypes.c_uint64
    bad = ctypes.c_uint64(0)
    last = ctypes.create_string_buffer(256)
    ok0 = lib.ic_test_graph_roundtrip_stats(ctypes.byref(bad), last, 256)
    bad0 = bad.value
    lib.ic_test_graph_roundtrip(1)
    try:
        torchc.reset()

        def f(p, g, buf):
            buf.mul_(0.9).add_(g)
            p.add_(buf, alpha=-0.1)
        ex = torchc.explain(f)(*_pg(8, 3, k=3)())
    finally:
        lib.ic_test_graph_roundtrip(0)
    ok = lib.ic_test_graph_roundtrip_stats(ctypes.byref(bad), last, 256) - ok0
    assert bad.value == bad0 and ok >= 1, last.value
    assert ex.graphs[0].count(" into=") == 2 and ex.inplace_updates == 2


@pytest.mark.allow_fallback
def test_overlapping_updated_inputs_left_to_eager():
    """two updated inputs the graph does not read, sharing memory: the copy-backs would run
    in input order, not eager's program order: the distinct-inputs guard refuses them"""
    def f(a, b):
        b.fill_(2.0)
        a.fill_(1.0)
    cf = torchc.compile(f)
    cf(torch.zeros(10), torch.zeros(10))
    x = torch.zeros(10)
    y = x.clone()
    f(x[:6], x[4:])
    cf(y[:6], y[4:])
    torch.testing.assert_close(y, x)


def test_many_parameters_guard_and_step():
    """200 parameters: every update in place, values as eager's (the distinct-inputs guard
    sorts the extents instead of testing every pair)"""
    torch.manual_seed(0)
    pe = [torch.randn(16, 8, requires_grad=True) for _ in range(200)]
    pc = [p.detach().clone().requires_grad_() for p in pe]
    for a, b in zip(pe, pc):
        a.grad = torch.randn_like(a)
        b.grad = a.grad.clone()
    oe, oc = torch.optim.SGD(pe, lr=0.1, momentum=0.9), torch.optim.SGD(pc, lr=0.1, momentum=0.9)
    step = torchc.compile(oc.step)
    for _ in range(3):
        oe.step()
        ex = torchc.explain(step)()
    for a, b in zip(pe, pc):
        torch.testing.assert_close(b, a)
    assert ex.inplace_updates == 400 and ex.copied_updates == 0
