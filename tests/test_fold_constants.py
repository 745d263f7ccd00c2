"""Tensors built from constants only are computed at capture time and kept as constants
(dynamo_hook/fold.c, issue 21): a 0-d one becomes a graph scalar, a larger one a graph input
holding eager's own values; the ops that built them leave the graph. What deberta_v2 and mpnet
do on the GPU: a CPU 0-d tensor (torch.tensor(n, dtype=float), sqrt of it) dividing a CUDA
tensor, and a CPU torch.arange(n) made into relative-position buckets, moved with .to(device).
Nothing that reads an input or draws random numbers is folded; a CPU tensor with more than 0
dims meeting CUDA tensors is eager's device error (the frame runs eagerly, eager raises). CPU
tensors of a CUDA graph beyond these: tests/test_devices_cuda.py.
Each case: one graph, no break, eager's values, dtype and device; cuda cases skip without a
GPU."""
import math

import pytest
import torch
import torch.nn.functional as F

import torchc

CUDA = pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"))
DEVICES = ["cpu", CUDA]


def one_graph(f, *args):
    torchc.reset()
    ex = torchc.explain(f)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex.break_reasons)
    return ex


def same(got, want, exact=True):
    assert got.dtype == want.dtype and got.device == want.device and got.shape == want.shape
    if exact:
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    else:
        torch.testing.assert_close(got, want)


def scaled_size_sqrt(q, scale_factor):
    return torch.sqrt(torch.tensor(q.size(-1), dtype=torch.float) * scale_factor)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_scale_from_sizes_is_a_graph_scalar(device, dtype):
    """deberta_v2: q / sqrt(tensor(d) * k).to(q.dtype) (a CPU 0-d tensor): folded, the graph
    holds the scalar (as many ops as with the constant written out)."""
    def f(q, k):
        scale = scaled_size_sqrt(q, 3)
        return torch.matmul(q, k.transpose(-1, -2)) / scale.to(dtype=q.dtype)

    def g(q, k):
        return torch.matmul(q, k.transpose(-1, -2)) / torch.tensor(math.sqrt(48.0), dtype=torch.float).to(dtype=q.dtype)

    q = torch.randn(2, 3, 5, 16, device=device, dtype=dtype)
    k = torch.randn(2, 3, 7, 16, device=device, dtype=dtype)
    ex = one_graph(f, q, k)
    same(ex.result, f(q, k), exact=False)
    assert ex.op_count == one_graph(g, q, k).op_count


@pytest.mark.parametrize("device", DEVICES)
def test_cpu_scalar_tensor_before_any_input(device):
    """The constant is made before the frame reads a tensor: it decides no device."""
    def f(x):
        s = torch.log(torch.tensor((512 - 1) / 128))
        mid = torch.tensor(128 - 1)
        return torch.where(x > 0.5, mid.type_as(x), x) / s

    x = torch.rand(4, 9, device=device)
    ex = one_graph(f, x)
    same(ex.result, f(x), exact=False)


def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
    ret = 0
    n = -relative_position
    num_buckets //= 2
    ret += (n < 0).to(torch.long) * num_buckets
    n = torch.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (
        torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    ret += torch.where(is_small, n, val_if_large)
    return ret


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("seq", [1, 7, 40])
def test_relative_position_buckets_folded(device, seq):
    """mpnet: buckets from torch.arange(n) on the CPU, moved to the input's device: on a GPU one
    graph input holding eager's buckets (the log/where/min chain is not in the graph, nor a
    bounds check of the embedding's index: its values are known); eager's values."""
    emb = torch.nn.Embedding(32, 4).to(device)

    def f(x):
        q = x.size(1)
        ctx = torch.arange(q, dtype=torch.long)[:, None]
        mem = torch.arange(q, dtype=torch.long)[None, :]
        rp = relative_position_bucket(mem - ctx).to(x.device)
        bias = emb(rp).permute([2, 0, 1]).unsqueeze(0)
        return x[:, None, :, :1] + bias

    def g(x, rp):
        bias = emb(rp).permute([2, 0, 1]).unsqueeze(0)
        return x[:, None, :, :1] + bias

    x = torch.randn(2, seq, 8, device=device)
    with torch.no_grad():
        ex = one_graph(f, x)
        same(ex.result, f(x))
        rp = relative_position_bucket(torch.arange(seq)[None, :] - torch.arange(seq)[:, None]).to(device)
        if device == "cuda" and seq < 40:
            # CPU buckets moved to the GPU: the same graph as with the buckets passed in, and
            # one copy of the constant (the graph's value is its own tensor, never the constant
            # the entry holds); on the CPU the graph builds them as without folding. At 40 the
            # fold's size bound declines full_like (40*40 int64 times its fill value 15): the
            # rest of the chain runs in the graph on CPU-tagged values (fold.c sym_home)
            assert ex.op_count == one_graph(g, x, rp).op_count + 1


@pytest.mark.parametrize("device", DEVICES)
def test_arange_bound_from_a_constant_tensor(device):
    """An arange bound taken from a 0-d tensor built from constants (funnel's pattern)."""
    def f(x):
        n = torch.tensor(x.size(0)) // 2
        return x[: int(n)] + torch.arange(n, device=x.device)[:, None]

    x = torch.randn(9, 3, device=device)
    ex = one_graph(f, x)
    same(ex.result, f(x))


def stride_pool_pos(pos_id, block_index, truncate_seq=True):
    cls_pos = pos_id.new_tensor([-(2**block_index) + 1])
    pooled_pos_id = pos_id[1:-1] if truncate_seq else pos_id[1:]
    return torch.cat([cls_pos, pooled_pos_id[::2]], 0)


def relative_pos(pos, stride, pooled_pos=None, shift=1):
    if pooled_pos is None:
        pooled_pos = pos
    ref_point = pooled_pos[0] - pos[0]
    num_remove = shift * len(pooled_pos)
    max_dist = ref_point + num_remove * stride
    min_dist = pooled_pos[0] - pos[-1]
    return torch.arange(max_dist, min_dist - 1, -stride, dtype=torch.long, device=pos.device)


@pytest.mark.parametrize("device", DEVICES)
def test_funnel_relative_positions_from_an_arange(device):
    """funnel (transformers 5.17): arange bounds are 0-d tensors indexed out of an arange of
    the sequence length and its pooled positions: all constants, one graph."""
    emb = torch.nn.Embedding(64, 4).to(device)

    def f(x):
        pos = torch.arange(0, x.size(1), dtype=torch.long, device=x.device)
        pooled = stride_pool_pos(pos, 1)
        r = relative_pos(pos, 2, pooled)
        return x.sum(1, keepdim=True) + emb(r + 20).sum(0)

    x = torch.randn(2, 12, 4, device=device)
    with torch.no_grad():
        ex = one_graph(f, x)
        same(ex.result, f(x), exact=False)


@pytest.mark.parametrize("device", DEVICES)
def test_constant_returned_is_a_fresh_tensor(device):
    """A folded constant returned: eager's values, dtype and device, a new tensor each call."""
    def f(x):
        c = torch.arange(6).view(2, 3).float() * 0.5
        return x + 1, c.to(x.device), torch.arange(4).t()

    x = torch.randn(3, device=device)
    fc = torchc.compile(f)
    a = fc(x)
    want = f(x)
    for g_, w_ in zip(a, want):
        same(g_, w_)
    a[1].add_(100)  # the caller's update does not reach the next call's result
    b = fc(x)
    same(b[1], want[1])
    assert torchc.explain(f)(x).graph_count == 1


def test_random_is_never_folded():
    """torch.randn with no input: a new draw each call, as in eager."""
    def f(x):
        noise = torch.randn(3) * 2 + torch.tensor(1.0)
        return x + noise

    x = torch.zeros(3)
    fc = torchc.compile(f)
    torch.manual_seed(0)
    a = fc(x)
    torch.manual_seed(0)
    want = f(x)
    torch.testing.assert_close(a, want)
    b = fc(x)
    assert not torch.equal(a, b)
    torch.manual_seed(1)
    c = fc(x)
    torch.manual_seed(1)
    torch.testing.assert_close(c, f(x))


def test_constant_made_to_require_grad_is_not_folded():
    """w = torch.ones(3).requires_grad_(): what is computed from it carries autograd's graph."""
    def f(x):
        w = torch.ones(3)
        w.requires_grad_()
        y = (w * 2).sum()
        return x + y, y.requires_grad

    x = torch.randn(3, requires_grad=True)
    got, greq = torchc.compile(f)(x)
    want, wreq = f(x)
    assert greq and wreq and got.requires_grad and want.requires_grad
    torch.testing.assert_close(got.detach(), want.detach())


def test_inputs_are_never_folded():
    """A value computed from an input (even its 0-d sum) stays in the graph: a new input's
    values give a new result, as in eager."""
    def f(x):
        s = torch.sqrt(x.sum() * torch.tensor(2.0))
        return x / s

    fc = torchc.compile(f)
    for _ in range(3):
        x = torch.rand(5) + 0.1
        torch.testing.assert_close(fc(x), f(x))


def test_sizes_are_guarded():
    """The folded value depends on x's size: another size gives eager's value for it."""
    def f(x):
        return x * torch.sqrt(torch.tensor(x.size(-1), dtype=torch.float))

    fc = torchc.compile(f)
    for n in (4, 9, 16):
        x = torch.ones(2, n)
        same(fc(x), f(x))


def test_large_constants_stay_in_the_graph():
    """Over torchc.config.fold_max_bytes a constant is built by the graph as before."""
    def f(x):
        return x + torch.arange(x.size(0) * x.size(1)).view_as(x).float() * 0.5

    x = torch.randn(64, 512)
    old = torchc.config.fold_max_bytes
    try:
        torchc.config.fold_max_bytes = 1024
        ex = one_graph(f, x)
        same(ex.result, f(x))
    finally:
        torchc.config.fold_max_bytes = old


@pytest.mark.parametrize("device", DEVICES)
def test_default_dtype_is_guarded(device):
    def f(x):
        return x + torch.tensor(0.25).to(x.dtype) * torch.tensor([1.0, 2.0, 3.0]).to(x.device, x.dtype)

    fc = torchc.compile(f)
    x = torch.randn(3, device=device, dtype=torch.float64)
    same(fc(x), f(x))
    old = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        same(fc(x), f(x))
    finally:
        torch.set_default_dtype(old)


def test_views_of_constants_and_updates():
    """A view of a constant updated in place, as eager's view sees it, or left to eager."""
    def f(x):
        a = torch.arange(6).float()
        b = a[:3]
        a.add_(1)
        return x + b

    x = torch.randn(3)
    fc = torchc.compile(f)
    torch.testing.assert_close(fc(x), f(x))
    torch.testing.assert_close(fc(x), f(x))


@pytest.mark.parametrize("device", DEVICES)
def test_constant_and_its_view_returned(device):
    """A constant and a view of it returned: eager's aliasing (an update of one shows in the
    other), values, device."""
    def f(x):
        a = torch.arange(6).float().to(x.device)
        return x * 2, a, a[:2]

    x = torch.randn(3, device=device)
    ex = one_graph(f, x)
    want = f(x)
    for g_, w_ in zip(ex.result, want):
        same(g_, w_)
    _, a, b = ex.result
    a[0] = 5
    assert b[0].item() == 5


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.allow_fallback
def test_cpu_tensor_with_cuda_tensor_raises_as_eager():
    """A CPU tensor of 1 dim built from constants, added to a CUDA tensor: eager's error (the
    graph ends before the add, which runs eagerly)."""
    def f(x):
        y = x * 2
        return y + torch.arange(3).float()

    x = torch.randn(3, device="cuda")
    with pytest.raises(RuntimeError) as want:
        f(x)
    with pytest.raises(RuntimeError) as got:
        torchc.compile(f)(x)
    assert type(got.value) is type(want.value)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_scalar_with_cuda_matmul_operand():
    """A CPU 0-d constant as the scalar of CUDA elementwise ops, cast and compared."""
    def f(x):
        s = torch.tensor(x.size(-1)).float().rsqrt()
        m = torch.tensor(2.0) > torch.tensor(1.0)
        return torch.where(x > 0, x * s, x * m) + s

    x = torch.randn(4, 8, device="cuda", dtype=torch.bfloat16)
    ex = one_graph(f, x)
    same(ex.result, f(x), exact=False)


def test_constants_under_autocast_follow_autocast():
    """A matmul of constants inside an autocast region, or with the caller's autocast on:
    eager's autocast dtype (not folded as if autocast were off)."""
    def f(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            w = torch.ones(4, 4) @ torch.full((4, 4), 0.5)
        return x + w, w.dtype

    def g(x):
        w = torch.ones(4, 4) @ torch.full((4, 4), 0.5)
        return x @ w

    x = torch.randn(4, 4)
    got, gdt = torchc.compile(f)(x)
    want, wdt = f(x)
    assert gdt == wdt == torch.bfloat16
    same(got, want)
    gc = torchc.compile(g)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = gc(x)
        want = g(x)
    same(got, want, exact=False)


# An in-place update of a tensor whose storage holds constants noted beside graph values (a
# materialized constant, a view of one): the notes are dropped, the update is a graph op, later
# ops read the updated values (beit's relative position index once meshgrid's tuple folds).
def _upd_item(x):
    b = torch.arange(4) * 2
    b[0] += 1
    return x + b


def _upd_view_col(x):
    b = torch.arange(8).view(4, 2).permute(1, 0).contiguous()
    b[:, 0] += 1
    return x + b.sum()


def _upd_mesh(x):
    c = torch.stack(torch.meshgrid(torch.arange(2), torch.arange(2), indexing="ij"))
    r = (c[:, :, None] - c[:, None, :]).contiguous()
    r[0] += 1
    return x + r.sum()


def _upd_before_after(x):
    a = torch.arange(6.).view(2, 3)
    v = a[0]
    w = a * 1
    v += 10
    u = a + 1
    return x.sum() + a, w, u, v


def _upd_slice_mul(x):
    a = torch.arange(6.)
    b = a[1:4]
    c = b.clone()
    b.mul_(3)
    return x + a[:4], c, b.sum()


@pytest.mark.parametrize("fn,shape", [(_upd_item, (4,)), (_upd_view_col, (4,)), (_upd_mesh, (4,)),
                                      (_upd_before_after, (2, 3)), (_upd_slice_mul, (4,))])
def test_update_of_noted_constants_is_a_graph_op(fn, shape):
    torchc.reset()
    x = torch.ones(shape)
    got, want = torchc.compile(fn)(x.clone()), fn(x.clone())
    got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and torch.equal(g, w)
    torchc.reset()
    ex = torchc.explain(fn)(x.clone())
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
