"""Extern (ATen) nodes inside one graph: matmul/mm/bmm/addmm/baddbmm/linear/conv run with
ATen between fused kernels; compiled vs eager, graph counts, epilogue fusion, grad mode."""
import copy
import math
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from conftest import assert_same, explain_of

TOL = dict(rtol=1e-4, atol=1e-4)


def _tol(dtype):
    if dtype == torch.bfloat16:
        return dict(rtol=2e-2, atol=2e-2)
    if dtype == torch.float16:
        return dict(rtol=2e-3, atol=2e-3)
    return TOL


def check(fn, *args, graphs=1, externs=None, tol=None):
    want = fn(*args)
    got = torchc.compile(fn)(*args)
    assert_same(got, want, **(tol or TOL))
    torchc.reset()
    ex = explain_of(fn, *args)
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex
    if externs is not None:
        assert len(ex.extern_calls) == externs, ex
    return ex


MATMUL_SHAPES = [
    ((5, 7), (7, 3)),        # mm
    ((7,), (7,)),            # dot
    ((7,), (7, 3)),          # vector @ matrix
    ((5, 7), (7,)),          # matrix @ vector
    ((2, 5, 7), (7, 3)),     # batched @ matrix
    ((7,), (2, 7, 3)),       # vector @ batched
    ((2, 1, 5, 7), (3, 7, 4)),  # broadcast batch dims
    ((0, 7), (7, 3)),        # empty rows
    ((5, 0), (0, 3)),        # empty reduction: zeros
    ((1, 1), (1, 1)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shapes(sa, sb):
    def f(a, b):
        return (a @ b).relu() + torch.matmul(a, b) * 2

    # [M, 1] @ [1, N] is an outer product: lowered to a broadcast multiply (no extern)
    outer = len(sa) == 2 and len(sb) == 2 and sa[1] == 1
    check(f, torch.randn(sa), torch.randn(sb), externs=0 if outer else 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_mm_bmm_addmm_baddbmm(dtype):
    a, b = torch.randn(6, 9, dtype=dtype), torch.randn(9, 5, dtype=dtype)
    p, q = torch.randn(3, 6, 9, dtype=dtype), torch.randn(3, 9, 5, dtype=dtype)
    bias, bb = torch.randn(5, dtype=dtype), torch.randn(6, 1, dtype=dtype)

    def f(a, b, p, q, bias, bb):
        return (torch.mm(a, b).tanh(), a.mm(b) + 1, torch.bmm(p, q) * 2, p.bmm(q).sum(-1),
                torch.addmm(bias, a, b), torch.addmm(bb, a, b, beta=0.5, alpha=-2.0),
                bias.addmm(a, b), torch.baddbmm(bb, p, q, alpha=0.25), torch.baddbmm(p @ q, p, q, beta=2.0))

    check(f, a, b, p, q, bias, bb, externs=10, tol=_tol(dtype))


def test_non_contiguous_operands_and_views():
    a = torch.randn(9, 6).t()              # transposed input
    b = torch.randn(5, 18)[:, ::2].t()     # strided input
    w = torch.randn(4, 9)

    def f(a, b, w):
        return (a @ b + 1, a @ w.t(), (a * 2) @ b.t().t(), torch.mm(a[1:, :], b))

    check(f, a, b, w, externs=4)


@pytest.mark.parametrize("xshape", [(5, 16), (2, 3, 16), (16,), (0, 16), (1, 16)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(xshape, bias):
    w, b = torch.randn(8, 16), torch.randn(8)

    def f(x, w, b):
        return F.gelu(F.linear(x, w, b if bias else None)) * 2 + 1

    check(f, torch.randn(xshape), w, b, externs=1)


def test_mlp_is_one_graph_with_fused_epilogues():
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(32, 64), nn.Linear(64, 32)
            self.ln = nn.LayerNorm(32)

        def forward(self, x):
            return self.ln(x + self.fc2(F.gelu(self.fc1(x))))

    m = MLP().eval()
    x = torch.randn(4, 10, 32)
    with torch.no_grad():
        want = m(x)
        assert_same(torchc.compile(m)(x), want, **TOL)
        ex = torchc.explain(torchc.compile(m))(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    assert ex.extern_calls == ["linear", "linear"], ex
    desc = ex.kernels[0]
    # extern, gelu kernel reading its output, extern, residual + layer norm kernel
    assert desc.count("extern linear(") == 2, desc
    assert desc.count("kernel k") == 4, desc


@pytest.mark.allow_fallback
def test_grad_mode_with_parameters_keeps_the_split():
    """Parameters that require grad in grad mode: the module still runs eagerly (autograd)."""
    m = nn.Linear(8, 4)
    x = torch.randn(3, 8)

    def f(x):
        return torch.relu(m(x)) + 1

    got = torchc.compile(f)(x)
    assert got.requires_grad and got.grad_fn is not None
    assert_same(got.detach(), f(x).detach(), **TOL)
    got.sum().backward()
    assert m.weight.grad is not None
    with torch.no_grad():
        torchc.reset()
        ex = explain_of(f, x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.extern_calls == ["linear"], ex


CONV_CASES = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(padding=2, dilation=2),
    dict(stride=(2, 1), padding=(1, 0)),
    dict(groups=2),
    dict(padding="same"),
    dict(padding="valid", stride=1),
]


@pytest.mark.parametrize("kw", CONV_CASES, ids=[str(k) for k in CONV_CASES])
def test_conv2d(kw):
    x = torch.randn(2, 4, 9, 11)
    w = torch.randn(6, 4 // kw.get("groups", 1), 3, 3)
    b = torch.randn(6)

    def f(x, w, b):
        return F.relu(F.conv2d(x, w, b, **kw)) + F.conv2d(x, w, None, **kw).mean(1, keepdim=True)

    check(f, x, w, b, externs=2)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, groups=3)])
def test_conv1d(kw):
    x, w, b = torch.randn(2, 6, 13), torch.randn(9, 6 // kw.get("groups", 1), 3), torch.randn(9)

    def f(x, w, b):
        return torch.sigmoid(F.conv1d(x, w, b, **kw)) * torch.conv1d(x, w, b, **kw)

    check(f, x, w, b, externs=2)


def test_conv_modules_channels_last_and_empty_batch():
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                        nn.Conv2d(8, 8, 3, stride=2, groups=2)).eval()
    x = torch.randn(2, 3, 10, 10)
    with torch.no_grad():
        for inp in (x, x.to(memory_format=torch.channels_last), torch.randn(0, 3, 10, 10)):
            assert_same(torchc.compile(net)(inp), net(inp), **TOL)
        torchc.reset()
        ex = torchc.explain(torchc.compile(net))(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and len(ex.extern_calls) == 2, ex


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_conv_layouts(layout, monkeypatch):
    # TORCHC_CONV_LAYOUT=nhwc: 2-d convs read [N,H,W,C] and write [N,H',W',O] (the default on
    # CUDA for 16-bit floats); the graph keeps NCHW views, so results are the same either way
    monkeypatch.setenv("TORCHC_CONV_LAYOUT", layout)
    torchc.reset()
    for kw in CONV_CASES:
        x, b = torch.randn(2, 4, 9, 11), torch.randn(6)
        w = torch.randn(6, 4 // kw.get("groups", 1), 3, 3)
        check(lambda x, w, b: F.relu(F.conv2d(x, w, b, **kw)) * 2, x, w, b, externs=1)
        check(lambda x, w: F.conv2d(x, w, None, **kw).sum(1), x.transpose(2, 3).contiguous().transpose(2, 3), w,
              externs=1)

    class Block(nn.Module):  # a ResNet basic block with a downsampling shortcut
        def __init__(self, c=6, o=8):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c, o, 3, 2, 1, bias=False), nn.BatchNorm2d(o)
            self.c2, self.b2 = nn.Conv2d(o, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o)
            self.down = nn.Sequential(nn.Conv2d(c, o, 1, 2, bias=False), nn.BatchNorm2d(o))

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return F.relu(y + self.down(x)).mean((2, 3))

    torch.manual_seed(0)
    net = Block().eval()
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
    with torch.no_grad():
        for x in (torch.randn(2, 6, 15, 17), torch.randn(1, 6, 8, 8).to(memory_format=torch.channels_last)):
            assert_same(torchc.compile(net)(x), net(x), **TOL)
        netb, xb = Block().eval().to(torch.bfloat16), torch.randn(2, 6, 16, 16, dtype=torch.bfloat16)
        assert_same(torchc.compile(netb)(xb), netb(xb), rtol=3e-2, atol=3e-2)
        torchc.reset()
        ex = torchc.explain(torchc.compile(net))(torch.randn(2, 6, 15, 17))
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and len(ex.extern_calls) == 3, ex
    if layout == "nhwc":  # BN/ReLU/residual stay NHWC between the convs: no transposing kernel
        assert "blocked" not in ex.kernels[0], ex.kernels[0]


def test_channels_last_propagation_through_elementwise_ops():
    # op(x.permute(0,3,1,2), b) is built as permute(op(x, b')) (graph.c): same values for
    # broadcast operands, 0-d values, where/cast/unary, slices, cats and constant pads
    def f(x, c, s):
        y = x.permute(0, 3, 1, 2)  # [N,C,H,W] view of NHWC data
        z = torch.relu(y * c.view(1, -1, 1, 1) + 0.5) - s
        z = torch.where(z > 0.1, z, y.to(torch.float64).float())
        z = torch.cat([z[:, :, 1:, ::2], F.pad(z, (0, 0, 1, 0))[:, :, :-2, ::2]], 1)
        return F.max_pool2d(z, 2, 2, 1) + z.mean((2, 3), keepdim=True)[:, :, :1], z.sum(1)

    x = torch.randn(2, 7, 9, 5)
    check(f, x, torch.randn(5), torch.tensor(0.25), externs=0)
    check(f, torch.randn(1, 4, 4, 3), torch.randn(3), torch.tensor(-1.0), externs=0)


def test_errors_follow_eager():
    def f(a, b):
        return a @ b

    # shape mismatch: eager raises, so does the compiled function
    with pytest.raises(RuntimeError):
        torchc.compile(f)(torch.randn(3, 4), torch.randn(5, 6))
    # dtypes mismatch / integer matmul: left to eager (which raises or computes)
    ai, bi = torch.randint(0, 5, (3, 4)), torch.randint(0, 5, (4, 2))
    assert_same(torchc.compile(f)(ai, bi), f(ai, bi))
    with pytest.raises(RuntimeError):
        torchc.compile(f)(torch.randn(3, 4), torch.randn(4, 2, dtype=torch.float64))


def test_attention_block_is_one_graph():
    class Block(nn.Module):
        def __init__(self, d=32, h=4):
            super().__init__()
            self.h = h
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, -1)
            q = q.view(b, t, self.h, d // self.h).transpose(1, 2)
            k = k.view(b, t, self.h, d // self.h).transpose(1, 2)
            v = v.view(b, t, self.h, d // self.h).transpose(1, 2)
            a = (q @ k.transpose(-1, -2) / (d // self.h) ** 0.5).softmax(-1) @ v
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    m = Block().eval()
    x = torch.randn(2, 7, 32)
    with torch.no_grad():
        assert_same(torchc.compile(m)(x), m(x), **TOL)
        ex = torchc.explain(torchc.compile(m))(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and len(ex.extern_calls) == 6, ex


# ---- scaled_dot_product_attention as an extern node -------------------------------------
SDPA_CASES = [
    dict(),
    dict(is_causal=True),
    dict(scale=0.3),
    dict(mask="bool"),
    dict(mask="float"),
    dict(mask="bool_bcast"),      # [B, 1, 1, S]: padding mask
    dict(mask="float_bcast"),     # [L, S]
    dict(mask="float", scale=0.5),
    dict(is_causal=True, L=5, S=9),  # causal with L != S (top-left aligned)
    dict(mask="bool", L=5, S=9, Ev=6),
    dict(ndim=3),
]


def _sdpa_inputs(kw, dtype=torch.float32):
    B, H, L, S, E, Ev = 2, 3, kw.get("L", 7), kw.get("S", 7), 8, kw.get("Ev", 8)
    bat = (B, H) if kw.get("ndim", 4) == 4 else (B * H,)
    q, k, v = torch.randn(*bat, L, E, dtype=dtype), torch.randn(*bat, S, E, dtype=dtype), torch.randn(*bat, S, Ev, dtype=dtype)
    m = kw.get("mask")
    mask = None
    if m == "bool":
        mask = torch.rand(*bat, L, S) > 0.3
        mask[..., 0] = True
    elif m == "float":
        mask = torch.randn(*bat, L, S, dtype=dtype)
    elif m == "bool_bcast":
        mask = torch.ones(B, 1, 1, S, dtype=torch.bool)
        mask[0, ..., -2:] = False
    elif m == "float_bcast":
        mask = torch.randn(L, S, dtype=dtype)
    return q, k, v, mask


@pytest.mark.parametrize("kw", SDPA_CASES, ids=[str(k) for k in SDPA_CASES])
def test_sdpa(kw):
    q, k, v, mask = _sdpa_inputs(kw)
    extra = {key: kw[key] for key in ("is_causal", "scale") if key in kw}

    def f(q, k, v, mask):
        o = F.scaled_dot_product_attention(q * 1.5, k, v, attn_mask=mask, **extra)
        return o.relu() + 1

    check(f, q, k, v, mask, externs=1)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_sdpa_dtypes(dtype):
    q, k, v, mask = _sdpa_inputs(dict(mask="float"), dtype)

    def f(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, mask) * 2

    check(f, q, k, v, mask, externs=1, tol=_tol(dtype))


def test_sdpa_positional_and_transposed_views():
    """positional mask/dropout/is_causal; q/k/v as transposed views of one projection"""
    x = torch.randn(2, 7, 3 * 32)

    def f(x):
        q, k, v = x.split(32, -1)
        q, k, v = [t.view(2, 7, 4, 8).transpose(1, 2) for t in (q, k, v)]
        o = F.scaled_dot_product_attention(q, k, v, None, 0.0, True)
        return o.transpose(1, 2).reshape(2, 7, 32)

    check(f, x, externs=1)


def test_sdpa_left_to_eager():
    """dropout, mask + is_causal, grouped heads, broadcast batch dims"""
    q, k, v, mask = _sdpa_inputs(dict(mask="bool"))

    def drop(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)

    torch.manual_seed(1)
    want = drop(q, k, v)
    torch.manual_seed(1)
    got = torchc.compile(drop)(q, k, v)
    assert_same(got, want)
    ex = explain_of(drop, q, k, v)
    # captured since training's ops_loss.c (eager's math path, its mask drawn as eager's)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex

    def both(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, mask, is_causal=True)

    assert_same(torchc.compile(both)(q, k, v, mask), both(q, k, v, mask))  # combined on the CPU
    ex = explain_of(both, q, k, v, mask)
    assert "is_causal" in str(ex.break_reasons[0]), ex  # (the only op: no graph, no graph break)

    def gqa(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True) + 1

    qg = torch.randn(2, 4, 7, 8)
    assert_same(torchc.compile(gqa)(qg, k[:, :2], v[:, :2]), gqa(qg, k[:, :2], v[:, :2]))

    def bc(q, k, v):
        return F.scaled_dot_product_attention(q, k, v) + 1

    assert_same(torchc.compile(bc)(q, k[:1], v[:1]), bc(q, k[:1], v[:1]))


def test_sdpa_module_dynamic_batch():
    """attention module: one graph; new batch sizes reuse it (symbolic batch)"""
    class Attn(nn.Module):
        def __init__(self, d=32, h=4):
            super().__init__()
            self.h, self.qkv, self.o = h, nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(self, x, mask):
            b, t, d = x.shape
            qkv = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return self.o(a.transpose(1, 2).reshape(b, t, d))

    m = Attn().eval()
    cm = torchc.compile(m)
    with torch.no_grad():
        for b in (2, 3, 5):
            x = torch.randn(b, 6, 32)
            mask = torch.randn(b, 1, 6, 6)
            assert_same(cm(x, mask), m(x, mask), **TOL)
        torchc.reset()
        ex = torchc.explain(torchc.compile(m))(torch.randn(2, 6, 32), torch.randn(2, 1, 6, 6))
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and "sdpa" in ex.extern_calls, ex


def test_gemm_externs_write_in_place_in_training():
    """A GPT-2-like block's training step (linears, attention by matmul, their gradients): every
    GEMM extern writes its result straight into the graph's buffer (an out= ATen call), none
    computes a new tensor that is then copied in (stats()["extern_copies"], the DtoD copies of
    a GPU step). Eager's loss and gradients."""
    torch.manual_seed(0)
    D, H = 32, 4

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(D)
            self.qkv = nn.Linear(D, 3 * D)
            self.proj = nn.Linear(D, D)
            self.fc = nn.Linear(D, 4 * D)
            self.out = nn.Linear(4 * D, D)

        def forward(self, x):
            B, L, _ = x.shape
            q, k, v = self.qkv(self.ln(x)).split(D, dim=-1)
            q, k, v = (t.reshape(B, L, H, D // H).transpose(1, 2) for t in (q, k, v))
            a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D // H), dim=-1) @ v
            x = x + self.proj(a.transpose(1, 2).reshape(B, L, D))
            return x + self.out(F.gelu(self.fc(x), approximate="tanh"))

    m = Block()
    me = copy.deepcopy(m)
    x = torch.randn(3, 7, D)
    cm = torchc.compile(m)
    s0 = torchc._C.stats()
    loss = cm(x).square().mean()
    loss.backward()
    s1 = torchc._C.stats()
    le = me(x).square().mean()
    le.backward()
    torch.testing.assert_close(loss, le, rtol=1e-4, atol=1e-5)
    for (n, p), pe in zip(m.named_parameters(), me.parameters()):
        torch.testing.assert_close(p.grad, pe.grad, rtol=1e-4, atol=1e-5, msg=n)
    calls = s1["extern_calls"] - s0["extern_calls"]
    assert calls >= 10, f"GEMM externs expected in forward and backward ({calls})"
    assert s1["extern_copies"] - s0["extern_copies"] == 0
