"""torch.autocast regions INSIDE compiled code (issue 21 item 2, issue 22 item 5;
dynamo_hook/autocast.c, sym_call.c BEFORE_WITH).

`with torch.autocast(...)` in the frame (torch.amp.autocast, torch.cpu.amp.autocast, the
decorator form, nested, enabled=False) is captured: the ops of the block follow eager's
casting rules (lower-precision matmul/conv/attention family, CPU fp32 losses, ops only CUDA's
lists hold run in their inputs' dtype), the state after the block is the one before it, and
torch.is_autocast_enabled / get_autocast_dtype answer the trace's state. Results are compared
with eager (dtype exactly, values to bf16 tolerance) and every test asserts one graph and no
break (a fallback to eager fails it).
"""
import copy
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc

BF16 = dict(rtol=2e-2, atol=2e-2)


def _flat(v):
    return list(v) if isinstance(v, (tuple, list)) else [v]


def _same(got, want):
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, torch.Tensor):
            assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype)
            torch.testing.assert_close(g.float(), w.float(), **BF16)
        else:
            assert type(g) is type(w) and g == w


def _whole(fn, *args, graphs=1):
    torchc.reset()
    want = fn(*args)
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex.break_reasons
    _same(ex.result, want)
    _same(torchc.compile(fn)(*args), want)  # the cached entry: same answer
    return ex


def test_region_matmul_bf16():
    def f(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x.t()
        return y, y.float() + 1, x * 2  # outside: float32 again

    ex = _whole(f, torch.randn(7, 5))
    assert ex.result[0].dtype == torch.bfloat16 and ex.result[2].dtype == torch.float32


def test_region_nested_and_disabled():
    w = torch.randn(8, 8)

    def f(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = F.linear(x, w)
            z = torch.softmax(y, -1)  # CPU autocast: runs in its input's dtype (bf16)
            with torch.autocast("cpu", enabled=False):
                q = y.float() @ w  # float32 inside the disabled block
            with torch.autocast("cpu", dtype=torch.float16):
                h = x @ w
            r = torch.mm(z, w) + q  # bf16 again after the inner blocks
        return y, z, q, h, r, x @ w

    ex = _whole(f, torch.randn(6, 8))
    assert [v.dtype for v in ex.result] == [torch.bfloat16, torch.bfloat16, torch.float32,
                                            torch.float16, torch.float32, torch.float32]


def test_spellings_and_queries():
    w = torch.randn(5, 5)

    def f(x):
        with torch.amp.autocast("cpu", dtype=torch.float16):
            a = torch.matmul(x, w)
            on, dt = torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")
            cuda_on = torch.is_autocast_enabled()
        with torch.cpu.amp.autocast():
            b = x @ w
        return a, b, on, dt, cuda_on, torch.is_autocast_enabled("cpu")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ex = _whole(f, torch.randn(3, 5))
    assert ex.result[2:] == (True, torch.float16, False, False)
    assert ex.result[1].dtype == torch.bfloat16


def test_default_dtype_follows_outer_region():
    """torch.autocast('cpu') without dtype takes the dtype in force: the outer region's."""
    def f(x):
        with torch.autocast("cpu", dtype=torch.float16):
            with torch.autocast("cpu"):
                y = x @ x
        with torch.autocast("cpu"):
            z = x @ x
        return y, z

    ex = _whole(f, torch.randn(4, 4))
    assert ex.result[0].dtype == torch.float16 and ex.result[1].dtype == torch.bfloat16


@torch.autocast("cpu", dtype=torch.bfloat16)
def _decorated(x, w):
    return x @ w


def test_decorator_form():
    w = torch.randn(6, 6)

    def f(x):
        return _decorated(x, w) + 1

    ex = _whole(f, torch.randn(3, 6))
    assert ex.result.dtype == torch.bfloat16
    _whole(_decorated, torch.randn(3, 6), w)  # the decorated function compiled itself


OPS = {
    "mm": lambda x, w: torch.mm(x[0], w),
    "bmm": lambda x, w: torch.bmm(x, w.expand(4, 8, 8)),
    "baddbmm": lambda x, w: torch.baddbmm(x, x, w.expand(4, 8, 8)),
    "addmm": lambda x, w: torch.addmm(w[0], x[0], w),
    "matmul": lambda x, w: torch.matmul(x, w),
    "linear": lambda x, w: F.linear(x, w, w[0]),
    "sdpa": lambda x, w: F.scaled_dot_product_attention(x, x, x),
    "softmax": lambda x, w: torch.softmax(x, -1),
    "log_softmax": lambda x, w: F.log_softmax(x @ w, -1),
    "layer_norm": lambda x, w: F.layer_norm(x, (8,)),
    "sum": lambda x, w: x.sum(-1),
    "exp": lambda x, w: x.exp(),
    "cat": lambda x, w: torch.cat([x, (x @ w)]),
    "stack": lambda x, w: torch.stack([x, x.bfloat16()]),
    "gelu": lambda x, w: F.gelu(x @ w),
    "mixed_add": lambda x, w: x + x.bfloat16(),
    "mean": lambda x, w: x.mean(-1),
    "pow": lambda x, w: x.pow(2),
    "prod": lambda x, w: x.prod(-1),
    "group_norm": lambda x, w: F.group_norm(x, 2),
    "cumsum": lambda x, w: x.cumsum(-1),
    "logsumexp": lambda x, w: x.logsumexp(-1),
}


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
DEVICES = [("cpu", torch.bfloat16), pytest.param("cuda", torch.bfloat16, marks=cuda),
           pytest.param("cuda", torch.float16, marks=cuda)]


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("in_dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("device,ac_dtype", DEVICES)
def test_op_casting_like_eager(name, in_dtype, device, ac_dtype):
    """CPU: eager's CPU lists; CUDA (GPU runs only): its fp32 lists (softmax, layer_norm, sum,
    exp, pow, cumsum, ...) run in float32, the matmul family in the autocast dtype."""
    op = OPS[name]
    w = torch.randn(8, 8, device=device)

    def f(x):
        with torch.autocast(device, dtype=ac_dtype):
            return op(x, w)

    _whole(f, torch.randn(4, 6, 8, device=device).to(in_dtype))


def test_region_in_inlined_module_forward():
    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(16, 48)
            self.out = nn.Linear(16, 16)
            self.ln = nn.LayerNorm(16)

        def forward(self, x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                q, k, v = self.qkv(x).chunk(3, -1)
                a = F.scaled_dot_product_attention(q, k, v)
                o = self.out(a)
            return self.ln(x + o.float())

    torch.manual_seed(0)
    m = Attn().eval()

    def f(x):
        return m(x) * 2

    with torch.no_grad():
        _whole(f, torch.randn(2, 5, 16))


def test_entry_state_still_guarded():
    """A region inside plus autocast around the call: each state its own entry."""
    def f(x):
        a = x @ x
        with torch.autocast("cpu", dtype=torch.float16):
            b = x @ x
        return a, b

    x = torch.randn(4, 4)
    torchc.reset()
    cf = torchc.compile(f)
    _same(cf(x), f(x))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got, want = cf(x), f(x)
    assert got[0].dtype == torch.bfloat16 and got[1].dtype == torch.float16
    _same(got, want)
    _same(cf(x), f(x))
    assert not torch.is_autocast_enabled("cpu")


@pytest.mark.allow_fallback  # the helper, run at the break, falls back itself (qr)
def test_failed_inlined_region_runs_eagerly_and_restores_state():
    """A helper whose region holds something the trace refuses runs eagerly as a whole (the
    frame breaks at its call); the ops after it are not autocast."""
    def helper(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x
            q, r = torch.linalg.qr(y.float())  # not captured: the call runs eagerly
        return y, q

    def f(x):
        y, q = helper(x)
        return y, q, x @ x

    x = torch.randn(5, 5)
    torchc.reset()
    want = f(x)
    ex = torchc.explain(f)(x)
    assert ex.graph_break_count >= 1 and ex.graph_count >= 1
    _same(ex.result, want)
    assert ex.result[2].dtype == torch.float32
    assert not torch.is_autocast_enabled("cpu")


def test_backward_through_region():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 4))
    mc = copy.deepcopy(m)

    def step(model, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = model(x)
        return h.float().pow(2).mean()

    x = torch.randn(6, 12)
    want = step(m, x)
    ex = torchc.explain(step)(mc, x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ex.backward_graph_count == 1, str(ex)
    got = ex.result
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, **BF16)
    want.backward()
    got.backward()
    for (n, p), q in zip(m.named_parameters(), mc.parameters()):
        assert q.grad is not None and q.grad.dtype == p.grad.dtype == torch.float32, n
        torch.testing.assert_close(q.grad, p.grad, **BF16)


def test_grad_scaler_loop_with_region_inside():
    """torch.amp.GradScaler around a compiled forward whose autocast region is inside: losses
    and parameters after 5 steps as eager's."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    mc = copy.deepcopy(m)

    def fwd(model, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
        return out.float().pow(2).mean()

    def run(model, f):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
        losses = []
        for i in range(5):
            x = torch.randn(4, 8, generator=torch.Generator().manual_seed(i))
            loss = f(model, x)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
        return losses

    torchc.reset()
    want = run(m, fwd)
    got = run(mc, torchc.compile(fwd))
    torch.testing.assert_close(got, want, **BF16)
    for p, q in zip(m.parameters(), mc.parameters()):
        torch.testing.assert_close(q, p, **BF16)
    ex = torchc.explain(fwd)(mc, torch.randn(4, 8))
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.backward_graph_count == 1, str(ex)
