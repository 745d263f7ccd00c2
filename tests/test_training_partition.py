"""Training (issue 22): the min-cut partitioner (saved vs recomputed forward values, by
bytes) and the lazily compiled backward.

Saved bytes come from torchc.explain (forward intermediates kept for the backward, not
counting inputs and the program's outputs); eager's from saved_tensors_hooks on the same
model. Each test also compares values and gradients with eager, so a partition that reads
a wrong value fails.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from conftest import assert_same
from test_training import CNN, Block, DropBlock, GRUCell, R, _eager_saved_bytes, grads_match

F32 = dict(rtol=1e-4, atol=1e-5)


# ---- the cut ----------------------------------------------------------------------------------
def test_mincut_saves_the_narrow_slice_not_the_matmul():
    # the backward reads h = e[:, :8] (through exp and sin); the greedy partition recomputed
    # the slice from the saved 32x256 matmul output, the min-cut saves the 32x8 slice
    def f(x, w):
        e = x @ w
        h = e[:, :8]
        return h.exp() * h.sin()

    ex = grads_match(f, R(32, 16), R(16, 256))
    assert ex.saved_bytes == 32 * 8 * 4, ex.saved_bytes


def test_mincut_saves_the_low_precision_copy():
    # a bf16 copy of a f32 matmul output feeds the rest: saving it costs half the bytes
    def f(x, w):
        e = (x @ w).to(torch.bfloat16)
        return (e * e.sigmoid()).float()

    ex = grads_match(f, R(16, 8), R(8, 64), tol=dict(rtol=2e-2, atol=2e-2))
    assert ex.saved_bytes == 16 * 64 * 2, ex.saved_bytes


def test_mincut_recomputes_pointwise_from_inputs():
    # a pointwise chain over inputs only: nothing but the inputs is read
    def f(x, y):
        t = torch.tanh(x * y + 1.0)
        return (t * t.sigmoid()).sum()

    ex = grads_match(f, R(64, 64), R(64, 64))
    assert ex.saved_bytes == 0, ex.saved_bytes


def test_mincut_never_recomputes_a_matmul():
    # recomputing the [256,256] product from its [256,2] and [2,256] inputs would cost no
    # saved bytes at all; it is an extern, so it (or its tanh) is saved instead (a K = 1
    # outer product is a broadcast multiply now, recomputed like any pointwise op)
    def f(x, w):
        return torch.tanh(x @ w).sum()

    ex = grads_match(f, R(256, 2), R(2, 256))
    assert ex.saved_bytes == 256 * 256 * 4, ex.saved_bytes
    assert ex.backward_graphs[0].count("extern") == 2, ex.backward_graphs[0]  # dx and dw only


def test_mincut_never_recomputes_dropout():
    # the mask is random: drawn once in the forward, saved for the backward
    torch.manual_seed(3)
    x = R(64, 32)

    def f(x):
        return (F.dropout(x, 0.3, training=True) * 3.0).tanh()

    xc = x.clone().requires_grad_(True)
    xe = x.clone().requires_grad_(True)
    torch.manual_seed(7)
    ex = torchc.explain(f)(xc)
    torch.manual_seed(7)
    oe = f(xe)
    assert ex.backward_graph_count == 1
    assert ex.saved_bytes > 0
    assert_same(ex.result, oe, **F32)
    g = torch.randn_like(oe)
    ex.result.backward(g)
    oe.backward(g)
    assert_same(xc.grad, xe.grad, **F32)


def test_mincut_residual_stream_is_saved():
    # a residual sum over many layers is saved per layer, not rebuilt from every layer's
    # outputs in every layer's backward (quadratic traffic)
    def f(x, *ws):
        h = x
        for w in ws:
            h = h + torch.tanh(h @ w)
        return h.sum()

    ws = [R(16, 16) * 0.3 for _ in range(8)]
    ex = grads_match(f, R(8, 16), *ws)
    bg = ex.backward_graphs[0]
    assert bg.count(" add ") < 40, bg


@pytest.mark.parametrize("name", ["block", "dropblock", "gru", "cnn", "mlp"])
def test_saved_bytes_at_most_eager(name):
    torch.manual_seed(0)
    m, xs = {"block": (Block(), (R(2, 5, 16),)), "dropblock": (DropBlock(), (R(2, 5, 16),)),
             "gru": (GRUCell(), (R(5, 4, 6),)), "cnn": (CNN(), (R(4, 3, 8, 8),)),
             "mlp": (nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)),
                     (R(32, 64),))}[name]
    m.train()
    ex = torchc.explain(m)(*xs)
    assert ex.backward_graph_count == 1
    eager = _eager_saved_bytes(m, *xs)
    assert 0 < ex.saved_bytes <= eager, (ex.saved_bytes, eager)
    if name in ("block", "gru"):  # pointwise regions between the matmuls are recomputed
        assert ex.saved_bytes < 0.8 * eager, (ex.saved_bytes, eager)


# ---- lazy backward compile --------------------------------------------------------------------
def _bc():
    return torchc._C.stats()["backward_compiles"]


def test_backward_compiled_on_first_backward_only():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(12, 24), nn.GELU(), nn.Linear(24, 5))
    me = nn.Sequential(nn.Linear(12, 24), nn.GELU(), nn.Linear(24, 5))
    me.load_state_dict(m.state_dict())
    cm = torchc.compile(m)
    x = R(7, 12)
    b0, c0 = _bc(), torchc._C.stats()["compiles"]
    for _ in range(3):  # inference in grad mode: no backward compile
        out = cm(x)
        assert out.requires_grad
    assert _bc() == b0
    assert torchc._C.stats()["compiles"] == c0 + 1
    assert_same(out, me(x), **F32)
    out.sum().backward()  # the first backward compiles it
    assert _bc() == b0 + 1
    for _ in range(2):
        cm(x).sum().backward()
    me(x).sum().backward()
    me(x).sum().backward()
    me(x).sum().backward()
    assert _bc() == b0 + 1  # and it is kept
    assert torchc._C.stats()["compiles"] == c0 + 1
    for pc, pe in zip(m.parameters(), me.parameters()):
        assert_same(pc.grad, pe.grad, **F32)


def test_backward_compile_shared_by_nodes_of_one_entry():
    # outputs of several forward calls alive at once, backward through all of them: one compile
    w = nn.Parameter(R(6, 6))
    cf = torchc.compile(lambda x: torch.sigmoid(x @ w).sum())
    b0 = _bc()
    outs = [cf(R(3, 6)) for _ in range(4)]
    assert _bc() == b0
    torch.stack(outs).sum().backward()
    assert _bc() == b0 + 1
    assert w.grad is not None and w.grad.abs().sum() > 0


# ---- double backward -------------------------------------------------------------------------
@pytest.mark.allow_fallback
def test_double_backward_falls_back_with_reason():
    def f(x):
        return (x ** 3).sum()

    x = R(5).requires_grad_(True)
    ex = torchc.explain(f)(x)
    assert ex.backward_graph_count == 1
    (g,) = torch.autograd.grad(ex.result, x, create_graph=True)
    assert_same(g, 3 * x.detach() ** 2, **F32)  # first order: right
    assert g.requires_grad
    g.sum().backward()  # the forward replayed eagerly with autograd (torchc/_autograd.py)
    assert_same(x.grad, 6 * x.detach(), **F32)
    # from the next call the frame runs eagerly, and explain says why
    ex2 = torchc.explain(f)(x)
    assert ex2.backward_graph_count == 0
    assert any("create_graph" in r for r in ex2.break_reasons), ex2.break_reasons
    (g2,) = torch.autograd.grad(ex2.result, x, create_graph=True)
    (gg,) = torch.autograd.grad(g2.sum(), x)
    assert_same(gg, 6 * x.detach(), **F32)


@pytest.mark.allow_fallback
def test_gradient_penalty_first_call_right():
    w = nn.Parameter(R(4, 4))
    cf = torchc.compile(lambda x: torch.tanh(x @ w).sum())
    x = R(3, 4).requires_grad_(True)
    out = cf(x)
    (gx,) = torch.autograd.grad(out, x, create_graph=True)
    (out + (gx ** 2).sum()).backward()  # first call: replayed eagerly, eager's value
    we = w.detach().clone().requires_grad_(True)
    xr = x.detach().clone().requires_grad_(True)
    oe = torch.tanh(xr @ we).sum()
    (ge,) = torch.autograd.grad(oe, xr, create_graph=True)
    (oe + (ge ** 2).sum()).backward()
    assert_same(w.grad, we.grad, **F32)
    # later steps: eager, right
    w.grad = None
    we = w.detach().clone().requires_grad_(True)
    for _ in range(2):
        w.grad = None
        xe = x.detach().clone().requires_grad_(True)
        out = cf(xe)
        (gx,) = torch.autograd.grad(out, xe, create_graph=True)
        (out + (gx ** 2).sum()).backward()
    we.grad = None
    xr = x.detach().clone().requires_grad_(True)
    oe = torch.tanh(xr @ we).sum()
    (ge,) = torch.autograd.grad(oe, xr, create_graph=True)
    (oe + (ge ** 2).sum()).backward()
    assert_same(w.grad, we.grad, **F32)


def test_first_order_create_graph_false_still_compiled():
    # retain_graph and plain backward keep the compiled path
    w = nn.Parameter(R(4, 4))
    f = lambda x: torch.tanh(x @ w).sum()
    x = R(3, 4)
    ex = torchc.explain(f)(x)
    ex.result.backward(retain_graph=True)
    ex.result.backward()
    ex2 = torchc.explain(f)(x)
    assert ex2.backward_graph_count == 1 and not ex2.break_reasons  # compiled, not a fallback
    we = w.detach().clone().requires_grad_(True)
    (torch.tanh(x @ we).sum() * 2).backward()
    assert_same(w.grad, we.grad, **F32)


# ---- torch.autograd.Function in user code ----------------------------------------------------
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * ctx.k * g * x, None


class ClampGrad(torch.autograd.Function):  # setup_context style, a backward unlike the forward's
    @staticmethod
    def forward(x):
        return x.clone()

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g.clamp(-0.1, 0.1)


@pytest.mark.parametrize("fn", ["square", "clampgrad"])
def test_autograd_function_captured_whole(fn):
    w = nn.Parameter(R(6, 6))
    we = w.detach().clone().requires_grad_(True)

    def square(x, w):
        h = torch.tanh(x @ w)
        return (Square.apply(h, 1.5) * h.sigmoid()).sum()

    def clampgrad(x, w):
        h = torch.tanh(x @ w)
        return (ClampGrad.apply(h) * h.sigmoid()).sum()

    f = {"square": square, "clampgrad": clampgrad}[fn]

    x = R(4, 6)
    ex = torchc.explain(f)(x, w)
    oe = f(x, we)
    assert_same(ex.result, oe, **F32)
    ex.result.backward()
    oe.backward()
    assert_same(w.grad, we.grad, **F32)
    # the call's forward and the user's backward are captured into the graphs around it
    # (dynamo_hook/autograd_fn.c): one forward graph, one backward graph, no break
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    assert ex.backward_graph_count == 1, str(ex)


def test_autograd_function_in_a_module_training_loop():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(5, 8)
            self.b = nn.Linear(8, 2)

        def forward(self, x):
            return self.b(Square.apply(torch.relu(self.a(x)), 0.5))

    torch.manual_seed(0)
    me, mc = M(), M()
    mc.load_state_dict(me.state_dict())
    cm = torchc.compile(mc)
    oe = torch.optim.SGD(me.parameters(), lr=0.05)
    oc = torch.optim.SGD(mc.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(2)
    for _ in range(10):
        x = torch.randn(6, 5, generator=g)
        for m, o, call in ((me, oe, me), (mc, oc, cm)):
            o.zero_grad()
            call(x).pow(2).mean().backward()
            o.step()
    for pe, pc in zip(me.parameters(), mc.parameters()):
        assert_same(pc.detach(), pe.detach(), **F32)
    ex = torchc.explain(cm)(x)
    assert ex.backward_graph_count == 1 and ex.graph_break_count == 0, str(ex)


# ---- AMP on the training path --------------------------------------------------------------
# Capturing a torch.autocast region itself is the forward capture's part (helper objmodel);
# here: the backward of the casts autocast inserts (bf16 matmuls, f32 master weights) matches
# eager's autocast gradients, and GradScaler's scale / unscale / inf-skip / update work on
# gradients produced by compiled backward graphs.
def _amp_linear(x, w, b):
    bf = torch.bfloat16
    return F.gelu(F.linear(x.to(bf), w.to(bf), b.to(bf))).float()


def test_amp_casts_backward_matches_eager_autocast():
    x, w, b = R(8, 16), R(32, 16), R(32)
    wc, bc = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
    we, be = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
    ex = torchc.explain(lambda x, w, b: _amp_linear(x, w, b).sum())(x, wc, bc)
    assert ex.backward_graph_count == 1 and ex.graph_break_count == 0, str(ex)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        oe = F.gelu(F.linear(x, we, be)).float().sum()
    assert_same(ex.result, oe, rtol=1e-2, atol=1e-2)
    ex.result.backward()
    oe.backward()
    assert wc.grad.dtype == we.grad.dtype == torch.float32
    # bf16 gradients: eager's fused gelu_backward rounds once, the decomposed rule may differ
    # by an ulp of bf16 (1/128 relative) in a few elements
    bf = dict(rtol=2e-2, atol=2e-2 * float(we.grad.abs().max()))
    assert_same(wc.grad, we.grad, **bf)
    assert_same(bc.grad, be.grad, **bf)


@pytest.mark.parametrize("init_scale", [2.0 ** 10, 2.0 ** 126])  # the second overflows: steps skipped
def test_grad_scaler_loop(init_scale):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = nn.Linear(6, 12)
            self.l2 = nn.Linear(12, 3)

        def forward(self, x):
            return self.l2(_amp_linear(x, self.l1.weight, self.l1.bias))

    torch.manual_seed(0)
    me, mc = M(), M()
    mc.load_state_dict(me.state_dict())
    cm = torchc.compile(mc)
    runs = []
    for m, call in ((me, me), (mc, cm)):
        opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=3)
        g = torch.Generator().manual_seed(5)
        for _ in range(12):
            x, y = torch.randn(5, 6, generator=g), torch.randn(5, 3, generator=g)
            opt.zero_grad()
            scaler.scale(F.mse_loss(call(x), y)).backward()
            scaler.step(opt)
            scaler.update()
        runs.append(scaler.get_scale())
    assert runs[0] == runs[1]
    for pe, pc in zip(me.parameters(), mc.parameters()):
        assert_same(pc.detach(), pe.detach(), rtol=1e-3, atol=1e-3)
    ex = torchc.explain(cm)(torch.randn(5, 6))
    assert ex.backward_graph_count == 1 and ex.graph_break_count == 0, str(ex)


# ---- GPU (run on the device: python -m pytest -q tests/test_training_partition.py -k gpu) ----
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@cuda
def test_gpu_mincut_lazy_backward_and_scaler():
    def f(x, w):
        e = x @ w
        h = e[:, :8]
        return h.exp() * h.sin()

    x, w = R(32, 16).cuda(), R(16, 256).cuda()
    ex = grads_match(f, x, w)
    assert ex.saved_bytes == 32 * 8 * 4, ex.saved_bytes
    m = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).cuda()
    me = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).cuda()
    me.load_state_dict(m.state_dict())
    cm = torchc.compile(m)
    b0 = _bc()
    cm(x)  # grad mode, no backward: nothing compiled for it
    assert _bc() == b0
    for mod, call in ((me, me), (m, cm)):
        opt = torch.optim.SGD(mod.parameters(), lr=0.05)
        scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 12)
        for i in range(5):
            xi = torch.randn(8, 16, device="cuda", generator=torch.Generator("cuda").manual_seed(i))
            opt.zero_grad()
            scaler.scale(call(xi).pow(2).mean()).backward()
            scaler.step(opt)
            scaler.update()
    assert _bc() == b0 + 1
    for pe, pc in zip(me.parameters(), m.parameters()):
        assert_same(pc.detach(), pe.detach(), rtol=1e-3, atol=1e-3)
