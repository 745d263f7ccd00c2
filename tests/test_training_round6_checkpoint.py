"""Training (issue 22): activation checkpointing inside a compiled function.

torch.utils.checkpoint.checkpoint (use_reentrant=False and True) is traced inline
(torchc/_polyfills.py checkpoint): no graph break, and what the region computes is recomputed
by the backward rather than saved (dynamo_hook/sym_call.c marks it, graph/partition.c cuts at
what the region reads, matmuls and reductions included). Random draws in a region are drawn
once and saved: the values eager's recompute draws again from the generator state it
restored. Differential against eager: losses, gradients and parameters over 10-30 steps.
"""
import functools

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

import torchc
from conftest import assert_same

TOL = dict(rtol=2e-4, atol=2e-5)


class MLPBlock(nn.Module):
    def __init__(self, d=16, p=0.0):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.p = p

    def forward(self, x):
        h = F.gelu(self.fc1(self.ln(x)))
        if self.p:
            h = F.dropout(h, self.p, training=self.training)
        return x + self.fc2(h)


class Attn(nn.Module):
    def __init__(self, d=16, h=2):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.h = h

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln(x)).split(D, -1)
        q, k, v = (t.view(B, T, self.h, D // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.proj(y.transpose(1, 2).reshape(B, T, D))


class Net(nn.Module):
    """blocks, each run through checkpoint (reentrant or not), then a head"""

    def __init__(self, blocks, reentrant=False, ckpt=True):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(16, 16)
        self.reentrant, self.ckpt = reentrant, ckpt

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=self.reentrant) if self.ckpt else b(x)
        return self.head(x)


def _train(make, xs, steps, reseed=False, tol=TOL, opt=torch.optim.SGD, lr=0.05):
    torch.manual_seed(0)
    me = make()
    mc = make()
    mc.load_state_dict(me.state_dict())
    cm = torchc.compile(mc)
    oe, oc = opt(me.parameters(), lr=lr), opt(mc.parameters(), lr=lr)
    for i in range(steps):
        x, y = xs[i]
        for m, o, fn in ((me, oe, me), (mc, oc, cm)):
            if reseed:
                torch.manual_seed(100 + i)
            o.zero_grad()
            loss = F.mse_loss(fn(x), y)
            loss.backward()
            o.step()
            if m is me:
                le = loss.detach()
            else:
                lc = loss.detach()
        assert_same(lc, le, **tol)
    for (n, pe), pc in zip(me.named_parameters(), mc.parameters()):
        assert_same(pc.detach(), pe.detach(), **tol), n
        assert_same(pc.grad, pe.grad, **tol), n
    return me, mc


def _data(n, *shape, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(*shape, generator=g), torch.randn(*shape, generator=g)) for _ in range(n)]


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpointed_mlp_blocks_train_like_eager(reentrant):
    xs = _data(20, 3, 5, 16)
    # reentrant: the input must require grad for eager's gradients to reach the parameters
    data = [(x.requires_grad_(True), y) for x, y in xs] if reentrant else xs
    _train(lambda: Net([MLPBlock(), MLPBlock()], reentrant=reentrant), data, 20)
    torchc.reset()
    x = data[0][0]
    ex = torchc.explain(Net([MLPBlock(), MLPBlock()], reentrant=reentrant))(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ex.backward_graph_count == 1


def test_checkpoint_saves_only_what_the_regions_read():
    # two checkpointed MLP blocks: the forward keeps each block's input (the second block's
    # input is the first one's output, [3,5,16] f32) and what the head reads, not the LayerNorm
    # statistics, the [3,5,64] fc1 outputs or the GELU values inside the blocks
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16, requires_grad=True)
    net = Net([MLPBlock(), MLPBlock()])
    plain = Net([MLPBlock(), MLPBlock()], ckpt=False)
    plain.load_state_dict(net.state_dict())
    torchc.reset()
    ex = torchc.explain(net)(x)
    torchc.reset()
    ex_plain = torchc.explain(plain)(x)
    assert ex.graph_break_count == 0 and ex_plain.graph_break_count == 0
    block_out = 3 * 5 * 16 * 4
    assert ex.saved_bytes <= 2 * block_out, (ex.saved_bytes, ex_plain.saved_bytes)
    assert ex_plain.saved_bytes >= 4 * ex.saved_bytes, (ex.saved_bytes, ex_plain.saved_bytes)
    # the backward recomputes each block's fc1 (GELU's gradient reads its output; fc2's
    # output is only added to the residual): 2 more externs than without checkpointing
    nb, nb_plain = ex.backward_graphs[0].count("extern"), ex_plain.backward_graphs[0].count("extern")
    assert nb == nb_plain + 2, (nb, nb_plain)
    ge = torch.autograd.grad(plain(x).sum(), [x] + list(plain.parameters()))
    gc = torch.autograd.grad(torchc.compile(net)(x).sum(), [x] + list(net.parameters()))
    for a, b in zip(gc, ge):
        assert_same(a, b, **TOL)


def test_checkpoint_with_dropout_uses_the_forward_mask():
    # eager's recompute restores the generator state: the mask in the backward is the
    # forward's; the compiled region saves it. Losses, gradients, parameters over 15 steps.
    xs = _data(15, 4, 6, 16, seed=2)
    _train(lambda: Net([MLPBlock(p=0.3), MLPBlock(p=0.2)]), xs, 15, reseed=True)


def test_checkpointed_attention_blocks():
    # (SGD: Adam divides the key bias's gradient, zero up to rounding under a softmax, by its
    # own size: eager and compiled differ there with or without checkpointing)
    xs = _data(12, 2, 7, 16, seed=3)
    _train(lambda: Net([Attn(), MLPBlock(), Attn()]), xs, 12, tol=dict(rtol=5e-4, atol=5e-5))


def test_checkpoint_function_with_kwargs_and_several_outputs():
    # a plain function (non-reentrant: keyword arguments pass through), two outputs, one of
    # them a reduction; a parameter read from the closure
    w = torch.randn(8, 8)

    def region(a, b, scale=1.0):
        h = torch.tanh(a @ w + b) * scale
        return h, h.pow(2).mean(-1, keepdim=True)

    def f(a, b, w):
        h, m = checkpoint(region, a, b, scale=0.5, use_reentrant=False)
        return (h * m).sum() + h.sum(0).amax()

    for shape in [(5, 8), (1, 8), (0, 8)]:
        a, b = torch.randn(*shape), torch.randn(8)
        ae, ac = a.clone().requires_grad_(), a.clone().requires_grad_()
        be, bc = b.clone().requires_grad_(), b.clone().requires_grad_()
        w.requires_grad_(True)
        le = f(ae, be, w)
        ge = torch.autograd.grad(le, [ae, be, w])
        torchc.reset()
        ex = torchc.explain(f)(ac, bc, w)
        assert ex.graph_break_count == 0, ex.break_reasons
        lc = torchc.compile(f)(ac, bc, w)
        gc = torch.autograd.grad(lc, [ac, bc, w])
        assert_same(lc.detach(), le.detach(), **TOL)
        for c, e in zip(gc, ge):
            assert_same(c, e, **TOL)
        w.requires_grad_(False)


def test_checkpoint_noncontiguous_and_broadcast_inputs():
    lin = nn.Linear(6, 6)

    def region(x, s):
        return lin(x) * s

    def f(x, s):
        return checkpoint(region, x.transpose(0, 1), s, use_reentrant=False).sin().sum()

    x, s = torch.randn(6, 4, 6), torch.randn(1, 6)
    xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
    se, sc = s.clone().requires_grad_(), s.clone().requires_grad_()
    le = f(xe, se)
    ge = torch.autograd.grad(le, [xe, se, lin.weight, lin.bias])
    cf = torchc.compile(f)
    lc = cf(xc, sc)
    gc = torch.autograd.grad(lc, [xc, sc, lin.weight, lin.bias])
    assert_same(lc.detach(), le.detach(), **TOL)
    for c, e in zip(gc, ge):
        assert_same(c, e, **TOL)


def test_checkpointed_cnn_block_without_batchnorm():
    class ConvBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(4, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1)
            self.gn = nn.GroupNorm(2, 4)

        def forward(self, x):
            return x + self.c2(F.relu(self.gn(self.c1(x))))

    class CNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 3, padding=1)
            self.blocks = nn.ModuleList([ConvBlock(), ConvBlock()])
            self.fc = nn.Linear(4, 5)

        def forward(self, x):
            x = self.stem(x)
            for b in self.blocks:
                x = checkpoint(b, x, use_reentrant=False)
            return self.fc(x.mean((2, 3)))

    g = torch.Generator().manual_seed(4)
    xs = [(torch.randn(2, 3, 7, 7, generator=g), torch.randn(2, 5, generator=g)) for _ in range(10)]
    _train(CNet, xs, 10, tol=dict(rtol=5e-4, atol=5e-5))


@pytest.mark.allow_fallback
def test_checkpointed_batchnorm_runs_eagerly_with_a_reason():
    # eager's recompute updates BatchNorm's running statistics a second time: the region is
    # left to eager (a break with the reason), so the statistics stay eager's
    class B(nn.Module):
        def __init__(self):
            super().__init__()
            self.c, self.bn = nn.Conv2d(3, 3, 3, padding=1), nn.BatchNorm2d(3)

        def forward(self, x):
            return F.relu(self.bn(self.c(x)))

    class N(nn.Module):
        def __init__(self):
            super().__init__()
            self.b = B()

        def forward(self, x):
            return checkpoint(self.b, x * 2, use_reentrant=False).sum()

    torch.manual_seed(0)
    me, mc = N(), N()
    mc.load_state_dict(me.state_dict())
    x = torch.randn(2, 3, 5, 5)
    torchc.reset()
    ex = torchc.explain(mc)(x)
    assert any("updates a tensor or an attribute in place" in str(r)
               for r in ex.break_reasons), ex.break_reasons
    mc.load_state_dict(me.state_dict())
    cm = torchc.compile(mc)
    for _ in range(3):
        me(x).backward()
        cm(x).backward()
    assert_same(mc.b.bn.running_mean, me.b.bn.running_mean, **TOL)
    assert_same(mc.b.bn.running_var, me.b.bn.running_var, **TOL)
    assert int(mc.b.bn.num_batches_tracked) == int(me.b.bn.num_batches_tracked)
    for pe, pc in zip(me.parameters(), mc.parameters()):
        assert_same(pc.grad, pe.grad, **TOL)


class GCLayer(nn.Module):
    """transformers' GradientCheckpointingLayer: __call__ runs the module through a stored
    functools.partial(checkpoint, use_reentrant=...) when gradient checkpointing is on"""
    gradient_checkpointing = False

    def __call__(self, *args, **kwargs):
        if self.gradient_checkpointing and self.training:
            return self._gradient_checkpointing_func(functools.partial(super().__call__, **kwargs), *args)
        return super().__call__(*args, **kwargs)


class HFLayer(GCLayer):
    def __init__(self):
        super().__init__()
        self.ln, self.a, self.b = nn.LayerNorm(8), nn.Linear(8, 32), nn.Linear(32, 8)

    def forward(self, x, scale=1.0):
        return x + self.b(F.gelu(self.a(self.ln(x)))) * scale


class HFModel(nn.Module):
    def __init__(self, ckpt, reentrant=False):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.layers = nn.ModuleList([HFLayer() for _ in range(3)])
        for layer in self.layers:
            layer.gradient_checkpointing = ckpt
            layer._gradient_checkpointing_func = functools.partial(checkpoint, use_reentrant=reentrant)
        self.reentrant = reentrant

    def forward(self, ids):
        h = self.emb(ids)
        for layer in self.layers:
            h = layer(h) if self.reentrant else layer(h, scale=0.5)
        return h


@pytest.mark.parametrize("reentrant", [False, True])
def test_gradient_checkpointing_layer_pattern(reentrant):
    # the module's own __call__ is traced (it was skipped for forward: no checkpoint at all);
    # the saved bytes drop to the layers' boundaries, the training matches eager's
    g = torch.Generator().manual_seed(6)
    xs = [(torch.randint(0, 10, (2, 7), generator=g), torch.randn(2, 7, 8, generator=g)) for _ in range(10)]
    _train(lambda: HFModel(True, reentrant), xs, 10)
    torch.manual_seed(0)
    ids = xs[0][0]
    torchc.reset()
    ex = torchc.explain(HFModel(True, reentrant))(ids)
    torchc.reset()
    ex_plain = torchc.explain(HFModel(False, reentrant))(ids)
    assert ex.graph_break_count == 0 and ex_plain.graph_break_count == 0, (ex.break_reasons, ex_plain.break_reasons)
    assert ex.saved_bytes <= 3 * 2 * 7 * 8 * 4 + 2 * 7 * 8, (ex.saved_bytes, ex_plain.saved_bytes)
    assert ex_plain.saved_bytes > 3 * ex.saved_bytes, (ex.saved_bytes, ex_plain.saved_bytes)


def test_module_subclass_call_override_is_traced():
    # nn.Module subclass with its own __call__ (no checkpoint): eager runs it, not forward alone
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(5, 5)

        def __call__(self, x):
            return super().__call__(x * 3) - 1

        def forward(self, x):
            return self.lin(x).relu()

    m = Scaled()

    def f(x):
        return m(x).sum(-1)

    for shape in [(4, 5), (1, 5), (0, 5)]:
        x = torch.randn(*shape)
        xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
        torchc.reset()
        ex = torchc.explain(f)(x)
        assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
        le, lc = f(xe), torchc.compile(f)(xc)
        assert_same(lc, le)
        ge = torch.autograd.grad(le.sum(), [xe, m.lin.weight])
        gc = torch.autograd.grad(lc.sum(), [xc, m.lin.weight])
        for c, e in zip(gc, ge):
            assert_same(c, e, **TOL)


def test_nested_checkpoints_with_dropout_and_dict_outputs():
    # checkpoint inside a checkpointed function (one region), dropout in the inner one, a dict
    # and tuple output; the same generator state before eager's and the compiled call
    lin, lin2 = nn.Linear(6, 6), nn.Linear(6, 6)

    def inner(x):
        return checkpoint(lin2, F.dropout(x, 0.2), use_reentrant=False).tanh()

    def outer(x):
        h = checkpoint(inner, lin(x), use_reentrant=False) * 2
        return {"h": h, "s": (h.cos(), h.mean())}

    def f(x):
        d = outer(x)
        return d["h"].sum() + d["s"][0].sum() * d["s"][1]

    params = list(lin.parameters()) + list(lin2.parameters())
    cf = torchc.compile(f)
    for step, shape in enumerate([(3, 6), (1, 6), (5, 6)]):
        x = torch.randn(*shape)
        xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
        torch.manual_seed(10 + step)
        le = f(xe)
        ge = torch.autograd.grad(le, [xe] + params)
        torch.manual_seed(10 + step)
        lc = cf(xc)
        gc = torch.autograd.grad(lc, [xc] + params)
        assert_same(lc.detach(), le.detach(), **TOL)
        for c, e in zip(gc, ge):
            assert_same(c, e, **TOL)
    torchc.reset()
    torch.manual_seed(0)
    ex = torchc.explain(f)(torch.randn(3, 6))
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons


def test_checkpoint_under_no_grad_is_the_function():
    lin = nn.Linear(4, 4)

    def f(x):
        # (use_reentrant=True with no input that requires grad is left to eager, which warns)
        return checkpoint(lin, x, use_reentrant=False).relu() + checkpoint(lin, x * 2, use_reentrant=False)

    x = torch.randn(3, 4)
    with torch.no_grad():
        torchc.reset()
        ex = torchc.explain(f)(x)
        assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
        assert_same(torchc.compile(f)(x), f(x))
