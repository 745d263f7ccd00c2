"""Whole training steps under torchc.compile (issue 22, deliverables 5 and 7): forward,
backward, gradient clipping, GradScaler and the optimizer step in one compiled function, with
eager's semantics. Differential: the same model, optimizer (and scaler) run eagerly and
compiled from one seed for several steps; parameters, gradients, optimizer state, the
scaler's scale and growth tracker, the skipped steps and the global RNG state (dropout draws
in the forward) must match. The graphs must only break where eager must leave the graph
(loss.backward(), the found-inf .item() GradScaler.step branches on, the optimizer step run
by torchc/_optim.py): Optimizer.zero_grad's _disable_dynamo wrapper, GradScaler's
defaultdicts and its ATen ops, clip_grad_norm_'s grouping and foreach ops stay in graphs.
"""
import copy
import types
from collections import defaultdict

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc

TOL = dict(rtol=1e-5, atol=1e-6)
INEVITABLE = ("Tensor.backward() not supported", "Tensor.item() not supported",
              "Optimizer.profile_hook_step.<locals>.wrapper runs between graphs")


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(0.2), nn.Linear(16, 3))


def _opt(kind, params, foreach):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-3, foreach=foreach)
    if kind == "sgd_nesterov":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, foreach=foreach)
    if kind == "adam":
        return torch.optim.Adam(params, lr=1e-2, foreach=foreach)
    return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, foreach=foreach)


def _make_step(m, opt, scaler, clip, set_to_none):
    def step(x, y):
        opt.zero_grad(set_to_none=set_to_none)
        out = m(x)
        loss = F.mse_loss(out, y)
        if scaler is not None:
            scaler.scale(loss).backward()
            if clip:
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            opt.step()
        return loss.detach()
    return step


def _snapshot(m, opt, scaler):
    st = {}
    for i, p in enumerate(m.parameters()):
        for k, v in opt.state[p].items():
            st[(i, k)] = v.clone() if isinstance(v, torch.Tensor) else v
    sc = None if scaler is None else (scaler.get_scale(), int(scaler._growth_tracker.item()))
    return ([p.detach().clone() for p in m.parameters()],
            [None if p.grad is None else p.grad.clone() for p in m.parameters()],
            st, sc, torch.get_rng_state())


def _run(kind, foreach, amp, clip, compiled, steps=8, infs=(), set_to_none=True):
    m = _model()
    opt = _opt(kind, m.parameters(), foreach)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 12, growth_interval=2) if amp else None
    step = _make_step(m, opt, scaler, clip, set_to_none)
    if compiled:
        step = torchc.compile(step)
    g = torch.Generator().manual_seed(1)
    torch.manual_seed(5)
    trace = []
    for i in range(steps):
        x, y = torch.randn(7, 6, generator=g) * 3, torch.randn(7, 3, generator=g)
        if i in infs:
            x[0, 0] = float("inf")
        loss = step(x, y)
        trace.append((loss, _snapshot(m, opt, scaler)))
    return trace, step, (m, opt, scaler)


def _compare(want, got):
    for i, ((lw, (pw, gw, sw, cw, rw)), (lg, (pg, gg, sg, cg, rg))) in enumerate(zip(want, got)):
        torch.testing.assert_close(lg, lw, equal_nan=True, **TOL)
        for a, b in zip(pg, pw):
            torch.testing.assert_close(a, b, **TOL)
        for a, b in zip(gg, gw):
            assert (a is None) == (b is None), i
            if a is not None:
                torch.testing.assert_close(a, b, equal_nan=True, **TOL)
        assert sg.keys() == sw.keys(), i
        for k in sw:
            torch.testing.assert_close(sg[k], sw[k], **TOL)
        assert cg == cw, (i, cg, cw)
        assert torch.equal(rg, rw), f"RNG state differs after step {i}"


def _check_breaks(step, x, y, max_graphs):
    ex = torchc.explain(step)(x, y)
    bad = [r for r in ex.break_reasons if not any(s in r for s in INEVITABLE)]
    assert not bad, ex.break_reasons
    assert ex.graph_count <= max_graphs, str(ex)
    assert ex.backward_graph_count >= 1


@pytest.mark.parametrize("kind", ["sgd", "sgd_nesterov", "adam", "adamw"])
@pytest.mark.parametrize("foreach", [None, False, True])
def test_plain_step_matches_eager(kind, foreach):
    want, _, _ = _run(kind, foreach, amp=False, clip=False, compiled=False)
    got, step, _ = _run(kind, foreach, amp=False, clip=False, compiled=True)
    _compare(want, got)
    _check_breaks(step, torch.randn(7, 6), torch.randn(7, 3), max_graphs=4)


@pytest.mark.parametrize("kind", ["sgd", "adamw"])
@pytest.mark.parametrize("foreach", [None, True])
def test_clip_grad_norm_step_matches_eager(kind, foreach):
    """clip_grad_norm_ (a generator of parameters, the grouping by device and dtype, the
    foreach norm and mul) inside the compiled step: before, the whole frame after backward
    ran eagerly ('returning an unsupported value')"""
    want, _, _ = _run(kind, foreach, amp=False, clip=True, compiled=False)
    got, step, _ = _run(kind, foreach, amp=False, clip=True, compiled=True)
    _compare(want, got)
    _check_breaks(step, torch.randn(7, 6), torch.randn(7, 3), max_graphs=4)


@pytest.mark.parametrize("kind", ["sgd", "adam", "adamw"])
@pytest.mark.parametrize("clip", [False, True])
def test_grad_scaler_step_matches_eager(kind, clip):
    """GradScaler: unscale (inf check), the skipped steps at the two inf inputs, the backoff
    and growth of the scale, the growth tracker: eager's, step by step"""
    want, _, (_, _, sw) = _run(kind, None, amp=True, clip=clip, compiled=False, steps=9, infs=(3, 6))
    got, step, (_, _, sg) = _run(kind, None, amp=True, clip=clip, compiled=True, steps=9, infs=(3, 6))
    _compare(want, got)
    scales = [c[1][3][0] for c in want]
    assert len(set(scales)) > 1  # the scale moved (backoff and growth both happened)
    _check_breaks(step, torch.randn(7, 6), torch.randn(7, 3), max_graphs=4)


def test_grad_scaler_step_bf16_autocast():
    """the step with a bf16 autocast forward: the same skipped steps and scales as eager, the
    parameters to bf16 tolerance"""
    runs = []
    for compiled in (False, True):
        m = _model()
        opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)

        def step(x, y):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = m(x)
            loss = F.mse_loss(out.float(), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            return loss.detach()
        step = torchc.compile(step) if compiled else step
        g = torch.Generator().manual_seed(2)
        torch.manual_seed(5)
        tr = []
        for i in range(8):
            x, y = torch.randn(7, 6, generator=g), torch.randn(7, 3, generator=g)
            if i == 4:
                x[1, 2] = float("nan")
            step(x, y)
            tr.append((scaler.get_scale(), int(scaler._growth_tracker.item()),
                       [p.detach().clone() for p in m.parameters()], torch.get_rng_state()))
        runs.append(tr)
    for (sw, tw, pw, rw), (sg, tg, pg, rg) in zip(*runs):
        assert (sw, tw) == (sg, tg)
        assert torch.equal(rw, rg)
        for a, b in zip(pg, pw):
            torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-2)


def test_zero_grad_set_to_none_false():
    """zero_grad(set_to_none=False): the gradients zeroed in place in the graph, kept as
    tensors (not None)"""
    want, _, _ = _run("sgd", None, amp=False, clip=False, compiled=False, set_to_none=False)
    got, step, (m, opt, _) = _run("sgd", None, amp=False, clip=False, compiled=True, set_to_none=False)
    _compare(want, got)
    _check_breaks(step, torch.randn(7, 6), torch.randn(7, 3), max_graphs=4)


def test_zero_grad_polyfill_in_graph():
    """opt.zero_grad() after the step is part of the step's last graph: no break at it"""
    m = nn.Linear(3, 2)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for p in m.parameters():
        p.grad = torch.ones_like(p)

    def f(x):
        y = x * 2
        opt.zero_grad()
        return y + 1

    ex = torchc.explain(f)(torch.randn(3))
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert all(p.grad is None for p in m.parameters())


# ---- a call that becomes the break: what it did is undone (item 3) --------------------------

class _Holder:
    pass


def test_break_call_keeps_no_inplace_update_of_input_it_read():
    """an attribute tensor first read inside a call that then breaks (.item()), updated in
    place before the break: the eager call makes the update, the graph must not (it did: the
    update ran twice, as GradScaler.step's unscale of every gradient did)"""
    h = _Holder()
    h.buf = torch.zeros(3)

    def helper():
        h.buf.add_(1)
        return h.buf.sum().item()

    def f(x):
        y = x * 2
        n = helper()
        return y + n

    cf = torchc.compile(f)
    for i in range(3):
        got = cf(torch.ones(3))
        assert torch.equal(h.buf, torch.full((3,), float(i + 1))), h.buf
        assert torch.equal(got, torch.full((3,), 2.0 + 3 * (i + 1)))
    ex = torchc.explain(f)(torch.ones(3))
    assert ex.graph_count >= 1 and any("item" in r for r in ex.break_reasons), ex.break_reasons


# ---- defaultdict (GradScaler's per-optimizer states) ---------------------------------------

def test_defaultdict_attribute_read_and_written_back():
    h = _Holder()
    h.d = defaultdict(list)

    def f(x):
        h.d["a"].append(1)
        h.d["b"]
        return x + len(h.d["a"])

    want_d = defaultdict(list)
    cf = torchc.compile(f)
    for i in range(3):
        want_d["a"].append(1)
        want_d["b"]
        got = cf(torch.zeros(2))
        assert type(h.d) is defaultdict and h.d.default_factory is list
        assert dict(h.d) == dict(want_d)
        assert torch.equal(got, torch.full((2,), float(i + 1)))


def test_defaultdict_with_lambda_factory():
    def f(x):
        d = defaultdict(lambda: defaultdict(list))
        d[x.device][x.dtype].append(x)
        d[x.device][x.dtype].append(x * 2)
        return sum(d[x.device][x.dtype])

    x = torch.randn(4)
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    torch.testing.assert_close(ex.result, x * 3)


def test_isinstance_generator_and_type_in_list():
    kinds = [torch.Tensor, nn.Parameter]

    def f(x):
        g = (t for t in (x, x))
        return x + (1 if isinstance(g, types.GeneratorType) else 0) + (1 if type(x) in kinds else 0)

    ex = torchc.explain(f)(torch.zeros(2))
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert torch.equal(ex.result, torch.full((2,), 2.0))


def test_list_in_dict_attribute_appended_then_reread():
    """a list held in a dict attribute, appended, then read again through the dict: the
    second read sees the append (it read the list as it was, on main: x + 0)"""
    h = _Holder()
    h.d = {"a": [], "b": []}

    def f(x):
        h.d["a"].append(1)
        return x + len(h.d["a"])

    cf = torchc.compile(f)
    for i in range(3):
        got = cf(torch.zeros(2))
        assert h.d == {"a": [1] * (i + 1), "b": []}
        assert torch.equal(got, torch.full((2,), float(i + 1)))


class _AddsOne:
    """__add__ updates a tensor attribute in place, then needs .item(): the operator runs
    eagerly between graphs (a BINARY_OP break in the top frame)"""

    def __init__(self, h):
        self.h = h

    def __add__(self, other):
        self.h.buf.add_(1)
        return other + other.sum().item()


def test_binop_break_after_inplace_update_runs_it_once():
    h = _Holder()
    h.buf = torch.zeros(2)
    e = _AddsOne(h)

    def f(x):
        y = x * 2
        z = e + y
        return z + 1

    cf = torchc.compile(f)
    for i in range(3):
        got = cf(torch.ones(2))
        assert torch.equal(h.buf, torch.full((2,), float(i + 1)))
        assert torch.equal(got, torch.full((2,), 7.0))


@pytest.mark.parametrize("set_to_none", [True, False])
def test_module_zero_grad_in_graph(set_to_none):
    """Module.zero_grad: set_to_none=False reads p.grad.grad_fn (None for a gradient that
    does not require grad) and zeroes in place; no break"""
    m = nn.Linear(3, 2)
    for p in m.parameters():
        p.grad = torch.ones_like(p)

    def f(x):
        m.zero_grad(set_to_none=set_to_none)
        return x + 1

    ex = torchc.explain(f)(torch.randn(3))
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    for p in m.parameters():
        if set_to_none:
            assert p.grad is None
        else:
            assert torch.equal(p.grad, torch.zeros_like(p))


@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_value_in_graph(foreach):
    """clip_grad_value_ (the foreach clamp_min_/clamp_max_ pair, or clamp_ per gradient):
    the gradients clipped as eager's, NaN kept, no break"""
    torch.manual_seed(0)
    m = nn.Linear(5, 4)
    grads = [torch.randn_like(p) * 3 for p in m.parameters()]
    grads[0][0, 0] = float("nan")

    def f(x):
        torch.nn.utils.clip_grad_value_(m.parameters(), 0.7, foreach=foreach)
        return x + 1

    for p, g in zip(m.parameters(), grads):
        p.grad = g.clone()
    ex = torchc.explain(f)(torch.randn(3))
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    for p, g in zip(m.parameters(), grads):
        torch.testing.assert_close(p.grad, g.clamp(-0.7, 0.7), equal_nan=True, rtol=0, atol=0)


class _CountingBool:
    def __init__(self):
        self.count = 0
        self.t = torch.ones(2)

    def __bool__(self):
        self.count += 1
        self.t.add_(1)
        return bool(self.t.sum() > 0)


@pytest.mark.allow_fallback
def test_branch_on_object_with_effects_runs_them_once():
    """`if obj:` whose __bool__ writes an attribute and updates a tensor, then branches on
    data: each call does both once (f runs eagerly, __bool__ is compiled as its own frame)"""
    b = _CountingBool()

    def f(x):
        y = x * 2
        if b:
            y = y + 1
        return y

    cf = torchc.compile(f)
    for i in range(3):
        got = cf(torch.ones(2))
        assert b.count == i + 1 and torch.equal(b.t, torch.full((2,), 2.0 + i))
        assert torch.equal(got, torch.full((2,), 3.0))


@pytest.mark.parametrize("kind", ["sgd", "adamw"])
def test_grad_scaler_step_no_recompile_after_warmup(kind):
    """after the first two steps (gradients None at first, fresh momentum buffers) nothing
    recompiles: skipped steps, a backoff and growth of the scale change no guard"""
    m = _model()
    opt = _opt(kind, m.parameters(), None)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 12, growth_interval=2)
    step = torchc.compile(_make_step(m, opt, scaler, True, True))
    g = torch.Generator().manual_seed(3)
    for i in range(10):
        x, y = torch.randn(7, 6, generator=g), torch.randn(7, 3, generator=g)
        if i in (4, 7):
            x[0, 0] = float("inf")
        if i == 2:
            c0 = torchc._C.stats()["compiles"]
        step(x, y)
    assert torchc._C.stats()["compiles"] == c0
