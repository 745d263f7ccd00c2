"""More calls that benchmarks/sweep_tiny.py (transformers architectures from tiny random configs)
found breaking graphs, compiled differentially against eager with graph/break counts from
torchc.explain (a silent fallback or a break fails, tests/conftest.py): conv with padding='same'
and an even kernel (LASR's encoder: eager pads one more zero after), a tensorless nn.Module
built in forward with a tuple argument (CANINE's nn.ConstantPad1d((lo, hi), 0)), and
Tensor.requires_grad_() under no_grad (MRA's fallback attention: only the flag changes).
Dtype, shape, strides and values must be eager's."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchc


def _same(g, w, exact=True):
    if isinstance(w, (tuple, list)):
        assert type(g) is type(w) and len(g) == len(w)
        for a, b in zip(g, w):
            _same(a, b, exact)
        return
    if not isinstance(w, torch.Tensor):
        assert g == w
        return
    assert (g.dtype, g.shape, g.requires_grad) == (w.dtype, w.shape, w.requires_grad), \
        (g.dtype, w.dtype, g.shape, w.shape, g.requires_grad, w.requires_grad)
    if g.numel() > 1:
        assert g.stride() == w.stride(), (g.stride(), w.stride())
    if exact:
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(g, w, equal_nan=True, rtol=1e-5, atol=1e-5)


def _whole(fn, *args, exact=True):
    """fn compiled whole (1 graph, 0 breaks) gives eager's result"""
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    _same(ex.result, want, exact)
    got = torchc.compile(fn)(*args)
    _same(got, want, exact)
    return ex


# ---- conv with padding='same' and an even kernel (asymmetric padding) ----------------------

CONV_SAME = [  # (nd, batch, cin, cout, spatial, kernel, dilation, groups)
    (1, 2, 3, 4, (9,), (4,), 1, 1),
    (1, 1, 4, 4, (1,), (2,), 1, 2),
    (1, 3, 2, 5, (7,), (6,), 3, 1),   # dilation 3 x (6 - 1) = 15: odd total
    (1, 0, 3, 2, (5,), (4,), 1, 1),   # empty batch
    (2, 2, 3, 4, (6, 5), (2, 3), 1, 1),  # even along H only
    (2, 1, 2, 2, (5, 8), (4, 4), (1, 2), 1),  # dilation 2 x 3: even along W
    (3, 1, 2, 3, (4, 3, 5), (2, 1, 3), 1, 1),
]


@pytest.mark.parametrize("case", CONV_SAME)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_same_even_kernel(case, bias):
    nd, n, cin, cout, sp, k, dil, g = case
    torch.manual_seed(sum(sp) + cout)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    x = torch.randn(n, cin, *sp)
    w = torch.randn(cout, cin // g, *k)
    b = torch.randn(cout) if bias else None

    def f(x, w, b):
        return conv(x, w, b, 1, "same", dil, g).relu()

    _whole(f, x, w, b, exact=False)


def test_conv_same_even_kernel_module_noncontiguous():
    torch.manual_seed(0)
    m = nn.Conv1d(6, 4, 4, padding="same").eval()
    x = torch.randn(3, 11, 6).transpose(1, 2)  # non-contiguous
    _whole(lambda x: m(x) * 2, x, exact=False)


def test_conv_same_even_kernel_grad():
    torch.manual_seed(1)
    m = nn.Conv2d(3, 2, (2, 4), padding="same")
    x = torch.randn(2, 3, 5, 7, requires_grad=True)
    want = m(x).square().sum()
    gx, gw = torch.autograd.grad(want, (x, m.weight))
    torchc.reset()
    got = torchc.compile(lambda x: m(x).square().sum())(x)
    hx, hw = torch.autograd.grad(got, (x, m.weight))
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(hx, gx)
    torch.testing.assert_close(hw, gw)


@pytest.mark.allow_fallback
def test_conv_same_with_stride_raises_as_eager():
    x, w = torch.randn(1, 2, 8), torch.randn(3, 2, 3)

    def f(x, w):
        return F.conv1d(x, w, None, 2, "same")

    with pytest.raises(Exception) as e1:
        f(x, w)
    torchc.reset()
    with pytest.raises(type(e1.value)):
        torchc.compile(f)(x, w)


# ---- a tensorless module built in forward with a tuple argument -----------------------------

class PadThenConv(nn.Module):
    def __init__(self, k, mode):
        super().__init__()
        self.k, self.mode = k, mode
        self.conv = nn.Conv1d(4, 4, k)

    def forward(self, x):
        total = self.k - 1
        lo = total // 2
        hi = total - lo
        if self.mode == "constant":
            pad = nn.ConstantPad1d((lo, hi), 0)
        elif self.mode == "reflect":
            pad = nn.ReflectionPad1d((lo, hi))
        else:
            pad = nn.ZeroPad2d((lo, hi, 1, 0))
        return self.conv(pad(x)) if self.mode != "zero2d" else pad(x) + 1


@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("mode", ["constant", "reflect", "zero2d"])
@pytest.mark.parametrize("length", [7, 1, 0])
def test_pad_module_built_in_forward(k, mode, length):
    if mode == "reflect" and length <= max(k - 1 - (k - 1) // 2, (k - 1) // 2):
        pytest.skip("eager refuses a reflection pad wider than the input")
    torch.manual_seed(k)
    m = PadThenConv(k, mode).eval()
    if length == 0 and mode != "zero2d":
        x = torch.randn(0, 4, 5)
    else:
        x = torch.randn(2, 4, max(length, 1))
    with torch.no_grad():
        _whole(m, x, exact=False)


def test_pad_module_built_in_forward_each_call_fresh():
    # a module with a float value in a tuple argument: a new one every call, the value eager's
    def f(x, v):
        return nn.ConstantPad2d((1, 2, 0, 1), v)(x)

    x = torch.randn(2, 3, 4)
    _whole(f, x, 1.5)
    cf = torchc.compile(f)
    _same(cf(x, -2.0), f(x, -2.0))


# ---- Tensor.requires_grad_() under no_grad ---------------------------------------------------

def f_zeros_rg(q, v):
    z = torch.zeros_like(q).requires_grad_()
    return z.requires_grad, z.grad_fn is None, (z + v).requires_grad, z * 2 + v


def f_rg_attr(q):
    z = q * 3
    z.requires_grad = True
    z.requires_grad_(True)
    z.add_(1)  # in place on a leaf that requires grad: eager allows it under no_grad
    return z.requires_grad, z.sum(1)


@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 1, 1), (0, 4, 3)])
def test_requires_grad_under_no_grad(shape):
    torch.manual_seed(len(shape))
    q = torch.randn(*shape)
    v = torch.randn(*shape).transpose(0, 2).contiguous().transpose(0, 2)  # non-contiguous
    with torch.no_grad():
        _whole(f_zeros_rg, q, v)
        _whole(f_rg_attr, q)


@pytest.mark.no_compile
def test_requires_grad_under_no_grad_leaving_the_graph_as_eager():
    # the flagged tensor itself (or a view of it) returned: its flag must be eager's
    def f(q):
        z = torch.zeros_like(q).requires_grad_()
        return z, z[0]

    q = torch.randn(3, 4)
    with torch.no_grad():
        want = f(q)
        torchc.reset()
        got = torchc.compile(f)(q)
    _same(list(got), list(want))
    assert got[0].is_leaf and got[0].requires_grad
    with torch.no_grad():
        torchc.reset()
        ex = torchc.explain(f)(q)
    assert any("require grad under no_grad" in r for r in ex.break_reasons), ex.break_reasons


@pytest.mark.no_compile
def test_requires_grad_of_a_view_under_no_grad_as_eager():
    def f(q):
        z = torch.zeros_like(q).requires_grad_()
        y = z.view(-1)
        return y.requires_grad, z.detach().requires_grad, y * 2

    q = torch.randn(3, 4)
    with torch.no_grad():
        want = f(q)
        torchc.reset()
        got = torchc.compile(f)(q)
    assert got[:2] == want[:2]
    _same(got[2], want[2])


@pytest.mark.allow_fallback
def test_requires_grad_on_an_int_tensor_under_no_grad_raises_as_eager():
    def f(q):
        return torch.zeros_like(q, dtype=torch.long).requires_grad_() + 1

    q = torch.randn(3)
    with torch.no_grad():
        with pytest.raises(RuntimeError):
            f(q)
        torchc.reset()
        with pytest.raises(RuntimeError):
            torchc.compile(f)(q)


# ---- scatter_reduce -------------------------------------------------------------------------

SCATTER_REDUCE = [  # (input shape, index/src shape, dim)
    ((5,), (9,), 0),
    ((4, 3), (6, 3), 0),
    ((3, 7), (3, 4), 1),
    ((1, 1), (1, 1), 0),
    ((4, 2), (0, 2), 0),     # no index: the input unchanged
    ((2, 3, 5), (2, 3, 2), -1),
]


@pytest.mark.parametrize("case", SCATTER_REDUCE)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(case, reduce, include_self):
    xs, iss, dim = case
    torch.manual_seed(len(xs) * 7 + iss[0])
    x = torch.randn(*xs)
    d = dim % len(xs)
    idx = torch.randint(0, xs[d], iss) if xs[d] else torch.zeros(iss, dtype=torch.long)
    src = torch.randn(*iss)

    def f(x, idx, src):
        return x.scatter_reduce(dim, idx, src, reduce, include_self=include_self) * 1

    _whole(f, x, idx, src, exact=False)


def test_scatter_reduce_int_mean_and_noncontiguous():
    torch.manual_seed(3)
    x = torch.randint(-9, 9, (3, 6)).t()  # non-contiguous [6, 3]
    idx = torch.randint(0, 6, (4, 3))
    src = torch.randint(-9, 9, (4, 3))

    def f(x, idx, src):
        a = torch.scatter_reduce(x, 0, idx, src, reduce="mean", include_self=False)
        b = x.clone().scatter_reduce_(0, idx, src, "amax")
        c = x.scatter_reduce(0, idx, src, "min")  # eager's alias of amin
        return a, b, c

    _whole(f, x, idx, src)


def test_segment_mean_as_tapas():
    # a segment reduction as transformers' TAPAS writes it: zeros, then scatter_reduce
    def f(values, seg, n):
        out = torch.zeros(n, dtype=torch.float)
        means = out.scatter_reduce(dim=0, index=seg.long(), src=values.float(), reduce="mean", include_self=False)
        return means.clone().view(2, n // 2)

    torch.manual_seed(5)
    v = torch.randn(13, dtype=torch.float64)
    seg = torch.randint(0, 8, (13,), dtype=torch.int32)
    _whole(f, v, seg, 8, exact=False)


@pytest.mark.allow_fallback
def test_scatter_reduce_with_grad_left_to_eager():
    x = torch.randn(4, requires_grad=True)
    idx = torch.tensor([0, 1, 1])
    src = torch.randn(3, requires_grad=True)

    def f(x, idx, src):
        return x.scatter_reduce(0, idx, src, "prod").sum()

    want = f(x, idx, src)
    gw = torch.autograd.grad(want, (x, src))
    torchc.reset()
    got = torchc.compile(f)(x, idx, src)
    gg = torch.autograd.grad(got, (x, src))
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(gg, gw)


@pytest.mark.no_compile
def test_scatter_reduce_bad_reduce_raises_as_eager():
    def f(x, idx, src):
        return x.scatter_reduce(0, idx, src, "add")

    x, idx, src = torch.randn(4), torch.tensor([0, 1]), torch.randn(2)
    with pytest.raises(RuntimeError):
        f(x, idx, src)
    torchc.reset()
    with pytest.raises(RuntimeError):
        torchc.compile(f)(x, idx, src)


# ---- F.fold (col2im) --------------------------------------------------------------------------

FOLD = [  # (batch or None, channels, output_size, kernel, dilation, padding, stride)
    (2, 3, (4, 6), (2, 2), 1, 0, (2, 2)),   # non-overlapping patches (MobileViTv2)
    (1, 2, (5, 5), (3, 3), 1, 1, 1),        # overlapping: sums
    (3, 1, (7, 4), (2, 3), (2, 1), (1, 0), (2, 1)),
    (None, 4, (3, 3), 1, 1, 0, 1),          # unbatched
    (1, 1, (1, 1), 1, 1, 0, 1),
    (2, 2, (6, 5), (3, 2), 1, (2, 1), (3, 2)),
]


def _blocks(os, k, dl, pad, st):
    two = lambda v: v if isinstance(v, tuple) else (v, v)
    os, k, dl, pad, st = map(two, (os, k, dl, pad, st))
    n = 1
    for i in range(2):
        n *= (os[i] + 2 * pad[i] - dl[i] * (k[i] - 1) - 1) // st[i] + 1
    return n, k[0] * k[1]


@pytest.mark.parametrize("case", FOLD)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fold(case, dtype):
    b, c, os, k, dl, pad, st = case
    L, kk = _blocks(os, k, dl, pad, st)
    torch.manual_seed(L + c)
    shape = (c * kk, L) if b is None else (b, c * kk, L)
    x = torch.randn(*shape, dtype=dtype)

    def f(x):
        return F.fold(x, os, k, dl, pad, st) * 2

    _whole(f, x)
    nc = torch.randn(*reversed(shape), dtype=dtype).transpose(-1, -2) if b is None else \
        torch.randn(b, L, c * kk, dtype=dtype).transpose(1, 2)  # non-contiguous
    _whole(f, nc)


def test_fold_module_and_grad():
    torch.manual_seed(2)
    m = nn.Fold((5, 4), (2, 2), padding=1, stride=1)
    L, kk = _blocks((5, 4), (2, 2), 1, 1, 1)
    x = torch.randn(2, 3 * kk, L, requires_grad=True)
    want = (m(x) ** 2).sum()
    gw, = torch.autograd.grad(want, x)
    torchc.reset()
    got = torchc.compile(lambda x: (m(x) ** 2).sum())(x)
    gg, = torch.autograd.grad(got, x)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(gg, gw)


@pytest.mark.no_compile
def test_fold_wrong_block_count_raises_as_eager():
    def f(x):
        return F.fold(x, (4, 4), 2, stride=2)

    x = torch.randn(1, 8, 5)
    with pytest.raises(RuntimeError):
        f(x)
    torchc.reset()
    with pytest.raises(RuntimeError):
        torchc.compile(f)(x)


# ---- conv_transpose2d of a channels-last input or weight -------------------------------------

@pytest.mark.parametrize("xcl,wcl", [(1, 0), (0, 1), (1, 1), (0, 0)])
@pytest.mark.parametrize("stride,padding,groups", [(2, 0, 1), (1, 1, 2), (3, 1, 1)])
def test_conv_transpose2d_channels_last(xcl, wcl, stride, padding, groups):
    torch.manual_seed(stride * 10 + padding + groups)
    cl = torch.channels_last
    x = torch.randn(2, 4, 5, 3)
    w = torch.randn(4, 6 // groups, 3, 2)
    b = torch.randn(6)
    x = x.to(memory_format=cl) if xcl else x
    w = w.to(memory_format=cl) if wcl else w

    def f(x, w, b):
        return F.conv_transpose2d(x, w, b, stride, padding, 0, groups).relu()

    _whole(f, x, w, b, exact=False)


def test_conv_transpose2d_channels_last_module_grad():
    torch.manual_seed(4)
    m = nn.ConvTranspose2d(3, 2, 2, stride=2).to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last).requires_grad_()
    want = m(x)
    gw = torch.autograd.grad(want.square().sum(), (x, m.weight))
    torchc.reset()
    got = torchc.compile(m)(x)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got, want)
    gg = torch.autograd.grad(got.square().sum(), (x, m.weight))
    torch.testing.assert_close(gg, gw)


# ---- interpolate mode='bicubic' ---------------------------------------------------------------

BICUBIC = [  # (input [N, C, H, W], size or None, scale_factor or None)
    ((1, 3, 4, 4), (7, 9), None),     # up
    ((2, 2, 9, 6), (4, 3), None),     # down
    ((1, 1, 1, 5), (3, 2), None),     # a 1-row input
    ((1, 2, 5, 5), None, 1.5),
    ((2, 3, 6, 4), None, (0.5, 2.0)),
    ((1, 1, 3, 3), (3, 3), None),     # same size
]


@pytest.mark.parametrize("case", BICUBIC)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_interpolate_bicubic(case, align, dtype):
    shape, size, sf = case
    torch.manual_seed(sum(shape))
    x = torch.randn(*shape, dtype=dtype)

    def f(x):
        return F.interpolate(x, size=size, scale_factor=sf, mode="bicubic", align_corners=align)

    _whole(f, x, exact=False)
    _whole(f, x.transpose(2, 3).contiguous().transpose(2, 3), exact=False)  # non-contiguous


def test_interpolate_bicubic_pos_embed_and_grad():
    # a ViT's position-embedding resize, as transformers writes it
    torch.manual_seed(9)
    pe = torch.randn(1, 16, 8, requires_grad=True)

    def f(pe, h, w):
        g = pe.reshape(1, 4, 4, 8).permute(0, 3, 1, 2)
        g = F.interpolate(g.to(torch.float32), size=(h, w), mode="bicubic", align_corners=False)
        return g.permute(0, 2, 3, 1).reshape(1, -1, 8)

    want = f(pe, 5, 7)
    gw, = torch.autograd.grad(want.square().sum(), pe)
    torchc.reset()
    got = torchc.compile(f)(pe, 5, 7)
    torch.testing.assert_close(got, want)
    gg, = torch.autograd.grad(got.square().sum(), pe)
    torch.testing.assert_close(gg, gw)


# ---- math.prod of a list built in the trace --------------------------------------------------

import math  # noqa: E402


def f_prod_sizes(x, strides):
    size = [n // s for n, s in zip(x.shape[1:-1], strides)]
    return x.reshape(-1, math.prod(size), x.shape[-1]) * math.prod(strides)


def f_prod_tensors(a, b):
    return math.prod([a, b, a]) + math.prod(t.sum() for t in (a, b))


@pytest.mark.parametrize("shape,strides", [((2, 4, 6, 3), (2, 3)), ((1, 1, 1, 1), (1, 1)), ((3, 5, 7, 2), (5, 7))])
def test_math_prod_of_a_list(shape, strides):
    x = torch.randn(*shape)
    _whole(f_prod_sizes, x, strides)


def test_math_prod_of_tensors():
    torch.manual_seed(6)
    a, b = torch.randn(3, 4), torch.randn(4)
    _whole(f_prod_tensors, a, b, exact=False)


def test_math_prod_of_symbolic_sizes():
    def f(x):
        size = [x.shape[0], x.shape[1]]
        return x.reshape(math.prod(size), -1) + 1

    cf = torchc.compile(f, dynamic=True)
    for shape in [(2, 3, 4), (5, 1, 2), (3, 7, 1)]:
        x = torch.randn(*shape)
        _same(cf(x), f(x))


# ---- torch.linalg.solve_triangular -------------------------------------------------------------

@pytest.mark.parametrize("shape_a,shape_b,left", [((4, 4), (4, 3), True), ((2, 3, 5, 5), (2, 3, 5, 2), True),
                                                  ((3, 3), (2, 3), False), ((1, 1), (1, 1), True),
                                                  ((2, 6, 6), (2, 6, 0), True)])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_solve_triangular(shape_a, shape_b, left, upper, unit, dtype):
    torch.manual_seed(shape_a[-1] * 3 + shape_b[-1])
    a = torch.randn(*shape_a, dtype=dtype) + 3 * torch.eye(shape_a[-1], dtype=dtype)  # well conditioned
    b = torch.randn(*shape_b, dtype=dtype)

    def f(a, b):
        x = torch.linalg.solve_triangular(a * 1, b, upper=upper, left=left, unitriangular=unit)
        return x + 0

    _whole(f, a, b, exact=False)
    _whole(f, a.transpose(-1, -2), b, exact=False)  # a non-contiguous A (its other triangle)


def test_solve_triangular_ut_transform_as_a_gated_delta_rule():
    # a chunked delta-rule UT transform: the unit lower-triangular system of its keys
    torch.manual_seed(8)
    k = F.normalize(torch.randn(2, 3, 8, 4), dim=-1)
    v = torch.randn(2, 3, 8, 4)
    beta = torch.rand(2, 3, 8)

    def f(k, v, beta):
        kb = k * beta.unsqueeze(-1)
        ut = (kb @ k.transpose(-1, -2)).tril(-1)
        return torch.linalg.solve_triangular(ut, v * beta.unsqueeze(-1), upper=False, unitriangular=True)

    _whole(f, k, v, beta, exact=False)


@pytest.mark.allow_fallback
def test_solve_triangular_with_grad_left_to_eager():
    a = (torch.randn(3, 3) + 3 * torch.eye(3)).requires_grad_()
    b = torch.randn(3, 2, requires_grad=True)

    def f(a, b):
        return torch.linalg.solve_triangular(a, b, upper=True).sum()

    want = f(a, b)
    gw = torch.autograd.grad(want, (a, b))
    torchc.reset()
    got = torchc.compile(f)(a, b)
    gg = torch.autograd.grad(got, (a, b))
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(gg, gw)


@pytest.mark.parametrize("left", [True, False])
def test_linalg_solve_strides_as_eager(left):
    # eager's linalg.solve gives LAPACK's column-major result for left=True, row-major else
    torch.manual_seed(11)
    a = torch.randn(2, 4, 4) + 4 * torch.eye(4)
    b = torch.randn(2, 4, 3) if left else torch.randn(2, 3, 4)

    def f(a, b):
        return torch.linalg.solve(a, b, left=left)

    _whole(f, a, b, exact=False)


def _flag_then_break(z):
    z.requires_grad_()
    z.tolist()  # not captured: the call becomes a graph break
    return z


@pytest.mark.allow_fallback
def test_requires_grad_under_no_grad_in_a_call_that_becomes_a_break():
    # the call runs eagerly after all: its flag is the real one, the trace's is dropped
    def f(q):
        z = q * 2
        w = _flag_then_break(z)
        return w.requires_grad, z.requires_grad, w + 1

    q = torch.randn(4)
    with torch.no_grad():
        want = f(q)
        torchc.reset()
        got = torchc.compile(f)(q)
    assert got[:2] == want[:2] == (True, True)
    _same(got[2], want[2])
    with torch.no_grad():
        torchc.reset()
        ex = torchc.explain(f)(q)
    assert ex.graph_break_count > 0 and ex.graph_count > 0, ex.break_reasons
