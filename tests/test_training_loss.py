"""Losses and attention dropout captured in training graphs (issue 22; dynamo_hook/ops_loss.c).

F.cross_entropy / nll_loss / mse_loss / l1_loss / smooth_l1_loss / huber_loss are graph math
whose gradients come from the backward rules: each test asserts one forward graph, no break
and one backward graph (a silent fallback fails it), and values and gradients equal to
eager's; float64 gradcheck through the compiled backward. scaled_dot_product_attention with
dropout_p > 0 is eager's CPU math path with its dropout mask drawn as eager draws it, so the
same seed gives eager's result exactly (checked); p = 0 and the statistics are checked too.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from test_training import grads_match

torch.manual_seed(0)
REDS = ["mean", "sum", "none"]


def _targets(n, c, ignore=(2,)):
    t = torch.randint(0, c, (n,))
    for i in ignore:
        t[i] = -100
    return t


@pytest.mark.parametrize("red", REDS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ls", [0.0, 0.15])
def test_cross_entropy_class_indices(red, weighted, ls):
    x, t, w = torch.randn(7, 5), _targets(7, 5), torch.rand(5) + 0.1
    fn = lambda x, t, w: F.cross_entropy(x, t, w if weighted else None, reduction=red, label_smoothing=ls)
    grads_match(fn, x, t, w, rg=[True, False, False])


@pytest.mark.parametrize("red", REDS)
def test_cross_entropy_nd_and_1d(red):
    x, t = torch.randn(2, 5, 3, 4), torch.randint(0, 5, (2, 3, 4))
    t[0, 1, 2] = -100
    grads_match(lambda x, t: F.cross_entropy(x, t, reduction=red, label_smoothing=0.1), x, t, rg=[True, False])
    grads_match(lambda x, t: F.cross_entropy(x, t, reduction=red), torch.randn(6), torch.tensor(4),
                rg=[True, False])


@pytest.mark.parametrize("red", REDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_probabilities(red, weighted):
    x, p, w = torch.randn(4, 6, 3), torch.softmax(torch.randn(4, 6, 3), 1), torch.rand(6)
    fn = lambda x, p, w: F.cross_entropy(x, p, w if weighted else None, reduction=red, label_smoothing=0.2)
    grads_match(fn, x, p, w, rg=[True, True, False])  # the target's gradient too


def test_cross_entropy_ignored_rows_and_index():
    x = torch.randn(5, 4)
    # every row ignored: mean is 0/0 = nan, as eager's; sum 0; the gradient 0 (sum) / nan (mean)
    for red in REDS:
        grads_match(lambda x, t: F.cross_entropy(x, t, reduction=red), x, torch.full((5,), -100), rg=[True, False])
        grads_match(lambda x, t: F.cross_entropy(x, t, reduction=red, label_smoothing=0.1), x,
                    torch.full((5,), -100), rg=[True, False])
    grads_match(lambda x, t: F.cross_entropy(x, t, ignore_index=1), x, torch.tensor([1, 0, 1, 3, 2]),
                rg=[True, False])
    grads_match(lambda x, t: F.cross_entropy(x, t), x, torch.tensor([1, 0, 1, 3, 2], dtype=torch.uint8),
                rg=[True, False])


@pytest.mark.parametrize("red", REDS)
def test_nll_loss(red):
    x, t, w = torch.randn(6, 4), _targets(6, 4, ignore=(0, 5)), torch.rand(4)
    grads_match(lambda x, t, w: F.nll_loss(F.log_softmax(x, 1), t, w, reduction=red), x, t, w,
                rg=[True, False, False])
    grads_match(lambda x, t: F.nll_loss(x, t, reduction=red), x, t, rg=[True, False])  # any input


def test_loss_modules_and_sizes():
    x, t = torch.randn(9, 3), torch.randint(0, 3, (9,))
    ce = nn.CrossEntropyLoss(label_smoothing=0.05)
    grads_match(lambda x, t: ce(x, t), x, t, rg=[True, False])
    grads_match(lambda x, t: F.cross_entropy(x, t), torch.randn(1, 1), torch.tensor([0]), rg=[True, False])
    grads_match(lambda x, t: F.cross_entropy(x, t, reduction="sum"), torch.randn(0, 3),
                torch.zeros(0, dtype=torch.long), rg=[True, False])
    xt = torch.randn(3, 9).t()  # non-contiguous logits
    grads_match(lambda x, t: F.cross_entropy(x, t), xt, t, rg=[True, False])


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("red", REDS)
def test_pointwise_losses(name, red):
    f = getattr(F, name)
    kw = {"smooth_l1_loss": dict(beta=0.6), "huber_loss": dict(delta=0.8)}.get(name, {})
    a, b = torch.randn(4, 5), torch.randn(4, 5)
    grads_match(lambda a, b: f(a, b, reduction=red, **kw), a, b)
    grads_match(lambda a, b: f(a, b, reduction=red, **kw), a.t(), b.t())  # non-contiguous


def test_mse_loss_module_and_broadcast_fallback():
    m = nn.MSELoss()
    grads_match(lambda a, b: m(a, b), torch.randn(3, 2), torch.randn(3, 2))
    # a target of another size: eager warns and broadcasts; left to eager with a reason
    a, b = torch.randn(4, 3, requires_grad=True), torch.randn(3)
    with pytest.warns(UserWarning):
        ex = torchc.explain(lambda a, b: F.mse_loss(a, b))(a, b)
    assert any("another size" in r for r in ex.break_reasons), ex.break_reasons
    torch.testing.assert_close(ex.result, F.mse_loss(a, b))


def test_loss_fallbacks_keep_eager_behaviour():
    x, t = torch.randn(3, 4, requires_grad=True), torch.tensor([0, 1, 2])
    w = torch.rand(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable"):
        torchc.compile(lambda x, t, w: F.cross_entropy(x, t, w))(x, t, w)
    with pytest.raises(RuntimeError, match="Long"):
        torchc.compile(lambda x, t: F.cross_entropy(x, t))(x, t.int())
    with pytest.raises(ValueError):
        torchc.compile(lambda x, t: F.cross_entropy(x, t, reduction="avg"))(x, t)


@pytest.mark.parametrize("case", ["ce", "ce_w_ls", "ce_prob", "ce_nd", "nll", "mse", "smooth_l1", "huber"])
def test_loss_gradcheck_f64(case):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5, 4, generator=g, dtype=torch.float64, requires_grad=True)
    t = torch.tensor([0, 3, -100, 1, 3])
    w = torch.rand(4, generator=g, dtype=torch.float64) + 0.5
    p = torch.softmax(torch.randn(5, 4, generator=g, dtype=torch.float64), 1).requires_grad_()
    y = torch.randn(5, 4, generator=g, dtype=torch.float64)
    fns = {
        "ce": (lambda x: F.cross_entropy(x, t), (x,)),
        "ce_w_ls": (lambda x: F.cross_entropy(x, t, w, label_smoothing=0.3, reduction="sum"), (x,)),
        "ce_prob": (lambda x, p: F.cross_entropy(x, p, w, label_smoothing=0.1), (x, p)),
        "ce_nd": (lambda x: F.cross_entropy(x.view(1, 4, 5), t.clamp(min=0).view(1, 5), reduction="none"), (x.detach().t().contiguous().requires_grad_(),)),
        "nll": (lambda x: F.nll_loss(x, t, w), (x,)),
        "mse": (lambda x: F.mse_loss(x, y), (x,)),
        "smooth_l1": (lambda x: F.smooth_l1_loss(x, y, beta=0.5), (x,)),
        "huber": (lambda x: F.huber_loss(x, y, delta=0.4, reduction="none"), (x,)),
    }
    fn, args = fns[case]
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ex.backward_graph_count == 1, str(ex)
    assert torch.autograd.gradcheck(torchc.compile(fn), args, eps=1e-6, atol=1e-5, rtol=1e-4)


# ---- scaled_dot_product_attention with dropout ------------------------------------------

def _sdpa(q, k, v, m, causal, p):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=p, is_causal=causal)


def _mask(kind):
    if kind == "bool":
        return torch.rand(5, 6) > 0.3
    if kind == "float":
        return torch.randn(2, 1, 5, 6)
    if kind == "dead":  # a row with every key masked: eager's safe softmax gives 0, no nan
        m = torch.ones(5, 6, dtype=torch.bool)
        m[2] = False
        return m
    return None


@pytest.mark.parametrize("causal,kind", [(False, None), (True, None), (False, "bool"), (False, "float"),
                                         (False, "dead")])
def test_sdpa_dropout_same_seed_as_eager(causal, kind):
    q, k, v = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 6, 4), torch.randn(2, 3, 6, 4)
    m = _mask(kind)
    if causal:
        k, v = k[:, :, :5], v[:, :, :5]
    torch.manual_seed(11)
    ex = torchc.explain(_sdpa)(*(a.clone().requires_grad_() for a in (q, k, v)), m, causal, 0.3)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ex.backward_graph_count == 1
    ins_e = [a.clone().requires_grad_() for a in (q, k, v)]
    ins_c = [a.clone().requires_grad_() for a in (q, k, v)]
    cf = torchc.compile(_sdpa)
    torch.manual_seed(5)
    oe = _sdpa(*ins_e, m, causal, 0.3)
    torch.manual_seed(5)
    oc = cf(*ins_c, m, causal, 0.3)
    torch.testing.assert_close(oc, oe, rtol=1e-5, atol=1e-5)
    gout = torch.randn_like(oe)
    ge = torch.autograd.grad(oe, ins_e, gout)
    gc = torch.autograd.grad(oc, ins_c, gout)
    for c, e in zip(gc, ge):
        assert not c.isnan().any()
        torch.testing.assert_close(c, e, rtol=1e-4, atol=1e-5)


def test_sdpa_dropout_statistics_and_p0():
    q = k = torch.zeros(1, 1, 64, 8)
    v = torch.ones(1, 1, 64, 8)
    cf = torchc.compile(_sdpa)
    torch.manual_seed(0)
    o = cf(q, k, v, None, False, 0.25)
    # uniform attention 1/64 over ones, each probability kept with 0.75 and scaled by 1/0.75
    kept = (o[..., 0] * 64 * 0.75).round()
    assert abs(kept.mean().item() / 64 - 0.75) < 0.06
    assert torch.allclose(o.mean(), torch.tensor(1.0), atol=0.06)
    o1 = cf(q, k, v, None, False, 1.0)
    assert torch.equal(o1, torch.zeros_like(o1))
    x = torch.randn(2, 2, 5, 4)
    torch.testing.assert_close(cf(x, x, x, None, True, 0.0), _sdpa(x, x, x, None, True, 0.0))


def test_sdpa_bad_dropout_raises_as_eager():
    """dropout_p outside [0, 1]: left to eager, which raises"""
    x = torch.randn(1, 1, 3, 2)
    f = lambda x: F.scaled_dot_product_attention(x, x, x, dropout_p=1.5)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        torchc.compile(f)(x)


# ---- loss modules constructed inside the frame (ops_loss.c sym_module_new) ----------------

def test_loss_module_made_in_forward():
    """loss_fct = nn.CrossEntropyLoss(...) inside forward (transformers' heads do this): made
    afresh each call as in eager, its forward captured in the same graph"""
    grads_match(lambda x, t: nn.CrossEntropyLoss(ignore_index=1, label_smoothing=0.1)(x, t),
                torch.randn(6, 4), torch.tensor([0, 1, 3, 1, 2, 2]), rg=[True, False])
    grads_match(lambda a, b: nn.MSELoss()(a, b), torch.randn(3, 5), torch.randn(3, 5))

    def f(a, b):
        m = nn.L1Loss(reduction="sum")
        return m(a, b), m

    cf = torchc.compile(f)
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    (l1, m1), (l2, m2) = cf(a, b), cf(a, b)
    assert m1 is not m2 and type(m1) is nn.L1Loss and m1.reduction == "sum"  # fresh objects, as eager's
    torch.testing.assert_close(l1, F.l1_loss(a, b, reduction="sum"))
    ex = torchc.explain(f)(a, b)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons


@pytest.mark.allow_fallback
def test_module_with_parameters_made_in_forward_not_captured():
    """a module holding tensors (random parameters each call in eager) is not taken for a
    constant: the trace breaks there"""
    def f(x):
        return nn.Linear(4, 2)(x)

    x = torch.randn(3, 4)
    ex = torchc.explain(f)(x)
    assert ex.break_reasons, ex
    assert torchc.compile(f)(x).shape == (3, 2)


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_losses_under_cpu_autocast(name):
    """CPU autocast runs these losses in float32 (arguments cast): captured the same way"""
    x, y, t = torch.randn(8, 5), torch.randn(8, 5), torch.tensor([0, 4, -100, 1, 2, 3, 3, 1])
    f = getattr(F, name)

    def fn(x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = x.bfloat16() * 2  # a bf16 value reaching the loss
            return f(h, t) if name in ("cross_entropy", "nll_loss") else f(h, y.bfloat16())

    out = grads_match(fn, x, y, rg=[True, False]).result
    assert out.dtype == torch.float32
