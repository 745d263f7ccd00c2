"""Custom ops with a registered autograd formula in training graphs (issue 22: transformers 5.25's
MoE experts run through transformers::grouped_mm_fallback, a torch.library.custom_op with
register_autograd, which made hf_mixtral / hf_qwen2_moe / hf_olmoe break in training only).

A call on tensors that require grad is traced as an autograd.Function of the op's own formula
(torchc/_custom_ops.py autograd_call; dynamo_hook/ops_custom.c): the op is the CUSTOM extern of
the forward graph, setup_context runs in the trace, the registered backward is traced into the
backward graph (its own custom-op calls externs there too). Each captured case asserts one
forward graph, no break and one backward graph, and compares the loss and the gradients with
eager's; ops without a formula (or called with keywords / defaults) still break with a reason.
"""
import pytest
import torch

import torchc
from test_training_autograd_fn import _captured

LIB = "torchc_tst_ag"
CALLS = {"gmm": 0, "gmm_bwd": 0}


@torch.library.custom_op(f"{LIB}::gmm", mutates_args=())
def gmm(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """grouped matmul: rows [offs[i-1], offs[i]) of x times w[i] (transformers' fallback form)"""
    CALLS["gmm"] += 1
    out = torch.zeros(x.size(0), w.size(2), dtype=x.dtype)
    start = 0
    for i, end in enumerate(offs.tolist()):
        if start != end:
            torch.mm(x[start:end], w[i], out=out[start:end])
        start = end
    return out


@gmm.register_fake
def _(x, w, offs):
    return torch.empty(x.size(0), w.size(2), dtype=x.dtype)


@torch.library.custom_op(f"{LIB}::gmm_bwd", mutates_args=())
def gmm_bwd(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    CALLS["gmm_bwd"] += 1
    gx, gw = torch.zeros_like(x), torch.zeros_like(w)
    start = 0
    for i, end in enumerate(offs.tolist()):
        if start != end:
            torch.mm(g[start:end], w[i].T, out=gx[start:end])
            torch.mm(x[start:end].T, g[start:end], out=gw[i])
        start = end
    return gx, gw


@gmm_bwd.register_fake
def _(x, w, offs, g):
    return torch.empty_like(x), torch.empty_like(w)


def _gmm_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.offs = inputs[2]  # a tensor kept as a ctx attribute, as transformers does


def _gmm_backward(ctx, g):
    x, w = ctx.saved_tensors
    gx, gw = gmm_bwd(x, w, ctx.offs, g)
    return gx, gw, None


gmm.register_autograd(_gmm_backward, setup_context=_gmm_setup)


@torch.library.custom_op(f"{LIB}::scaled", mutates_args=())
def scaled(x: torch.Tensor, k: float) -> torch.Tensor:
    return x * k


@scaled.register_fake
def _(x, k):
    return torch.empty_like(x)


def _scaled_setup(ctx, inputs, output):
    ctx.k = inputs[1]


def _scaled_backward(ctx, g):
    # needs_input_grad as eager gives it: one entry per op argument
    assert len(ctx.needs_input_grad) == 2
    return (g * ctx.k if ctx.needs_input_grad[0] else None), None


scaled.register_autograd(_scaled_backward, setup_context=_scaled_setup)


@torch.library.custom_op(f"{LIB}::plain", mutates_args=())
def plain(x: torch.Tensor) -> torch.Tensor:
    return x.sin()


@plain.register_fake
def _(x):
    return torch.empty_like(x)


def _matches_eager(fn, args, wrt):
    le = fn(*args)
    ge = torch.autograd.grad(le, wrt)
    cf = torchc.compile(fn)
    for _ in range(2):  # the second call runs the cached graphs
        lc = cf(*args)
        gc = torch.autograd.grad(lc, wrt)
        torch.testing.assert_close(lc, le)
        for a, b in zip(gc, ge):
            torch.testing.assert_close(a, b)


@pytest.mark.parametrize("offs", [[2, 2, 7], [0, 7, 7], [1, 4, 7]])
def test_grouped_mm_with_registered_autograd_captured(offs):
    torch.manual_seed(0)
    x = torch.randn(7, 4, requires_grad=True)
    w = torch.randn(3, 4, 5, requires_grad=True)
    o = torch.tensor(offs)

    def f(x, w, o):
        h = gmm(torch.tanh(x), w, o)  # the op between captured ops
        return (h * h).sum()

    ex = _captured(f, x, w, o)
    assert "extern" in ex.backward_graphs[0], ex.backward_graphs[0]  # gmm_bwd, an extern of the backward
    n0 = dict(CALLS)
    _matches_eager(f, (x, w, o), [x, w])
    assert CALLS["gmm"] > n0["gmm"] and CALLS["gmm_bwd"] > n0["gmm_bwd"]


def test_grouped_mm_through_the_op_packet_and_overload():
    torch.manual_seed(1)
    x = torch.randn(5, 3, requires_grad=True)
    w = torch.randn(2, 3, 4, requires_grad=True)
    o = torch.tensor([3, 5])
    for op in (torch.ops.torchc_tst_ag.gmm, torch.ops.torchc_tst_ag.gmm.default):
        def f(x, w, o, op=op):
            return op(x.t().contiguous().t(), w, o).relu().sum()

        _captured(f, x, w, o)
        _matches_eager(f, (x, w, o), [x, w])


def test_needs_input_grad_and_a_non_tensor_argument():
    x = torch.randn(6, requires_grad=True)
    y = torch.randn(6)  # no grad: the op's second use gets needs_input_grad False

    def f(x, y):
        return (scaled(x, 2.5) * scaled(y, -1.0)).sum()

    _captured(f, x, y)
    _matches_eager(f, (x, y), [x])


def test_size_one_and_zero_rows():
    for n in (0, 1):
        x = torch.randn(n, 4, requires_grad=True)
        w = torch.randn(1, 4, 2, requires_grad=True)
        o = torch.tensor([n])

        def f(x, w, o):
            return gmm(x, w, o).sum() + w.sum()

        _matches_eager(f, (x, w, o), [x, w])


@pytest.mark.allow_fallback
def test_op_without_formula_breaks_with_reason():
    x = torch.randn(5, requires_grad=True)

    def f(x):
        return plain(x * 2).sum()

    torchc.reset()
    ex = torchc.explain(f)(x)
    assert any("no autograd formula" in r for r in ex.break_reasons), ex.break_reasons
    with pytest.raises(RuntimeError):  # eager: no autograd kernel registered
        torch.autograd.grad(plain(x * 2).sum(), [x])


def test_keyword_arguments_bound_in_schema_order():
    # transformers calls grouped_mm_fallback(input, weight, offs=offs)
    torch.manual_seed(2)
    x = torch.randn(6, 3, requires_grad=True)
    w = torch.randn(2, 3, 4, requires_grad=True)
    o = torch.tensor([2, 6])

    def f(x, w, o):
        return (torch.ops.torchc_tst_ag.gmm(x, w, offs=o).sum() + gmm(x, offs=o, w=w).exp().sum()
                + scaled(x, k=3.0).sum())

    _captured(f, x, w, o)
    _matches_eager(f, (x, w, o), [x, w])


@torch.library.custom_op(f"{LIB}::with_default", mutates_args=())
def with_default(x: torch.Tensor, k: float = 2.0) -> torch.Tensor:
    return x * k


@with_default.register_fake
def _(x, k=2.0):
    return torch.empty_like(x)


with_default.register_autograd(lambda ctx, g: (g * ctx.k, None),
                               setup_context=lambda ctx, inputs, output: setattr(ctx, "k", inputs[1]))


@pytest.mark.allow_fallback
def test_argument_left_to_its_default_left_to_eager_with_reason():
    x = torch.randn(5, requires_grad=True)

    def f(x):
        return with_default(x).sum()

    torchc.reset()
    ex = torchc.explain(f)(x)
    assert any("default arguments" in r for r in ex.break_reasons), ex.break_reasons
    _matches_eager(f, (x,), [x])
