"""Custom operators captured as graph externs (dynamo_hook/ops_custom.c, torchc/_custom_ops.py,
the CUSTOM extern): calls of torch.ops.<ns>.<op> (packet or overload), of ops made with
torch.library.custom_op and with torch.library.define + impl, with their output metas from
the registered fake impl, run through the dispatcher when the graph runs. Written arguments
(Tensor(a!)) are updated as eager updates them. Every case asserts the graph/break counts
and that the op appears as one `custom` extern: a silent fallback (which would also give
eager's values) fails; cases left to eager assert their reason."""
import pytest
import torch

import torchc

LIB = "torchc_tst"
_lib = torch.library.Library(LIB, "FRAGMENT")  # kept alive for the module
CALLS = {"scale": 0, "noisy": 0}


@torch.library.custom_op(f"{LIB}::scale", mutates_args=())
def scale(x: torch.Tensor, k: float, dims: list[int]) -> torch.Tensor:
    CALLS["scale"] += 1
    return x.sum(dims, keepdim=True) * k + x


@scale.register_fake
def _(x, k, dims):
    return torch.empty_like(x)


@torch.library.custom_op(f"{LIB}::nofake", mutates_args=())
def nofake(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@torch.library.custom_op(f"{LIB}::add_into", mutates_args=("out",))
def add_into(out: torch.Tensor, x: torch.Tensor, alpha: float) -> None:
    out.add_(x, alpha=alpha)


@add_into.register_fake
def _(out, x, alpha):
    return None


@torch.library.custom_op(f"{LIB}::two", mutates_args=())
def two(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x + y, (x * y).sum(0)


@two.register_fake
def _(x, y):
    return torch.empty_like(x), x.new_empty(x.shape[1:])


@torch.library.custom_op(f"{LIB}::mixed", mutates_args=())
def mixed(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x + 1, x.argmax(-1)


@mixed.register_fake
def _(x):
    return torch.empty_like(x), x.new_empty(x.shape[:-1], dtype=torch.long)


@torch.library.custom_op(f"{LIB}::transposed", mutates_args=())
def transposed(x: torch.Tensor) -> torch.Tensor:
    return (x * 3).t()


@transposed.register_fake
def _(x):
    return x.new_empty(x.shape).t()


@torch.library.custom_op(f"{LIB}::parts", mutates_args=())
def parts(x: torch.Tensor, n: int) -> list[torch.Tensor]:
    return [x * i for i in range(n)]


@parts.register_fake
def _(x, n):
    return [torch.empty_like(x) for _ in range(n)]


@torch.library.custom_op(f"{LIB}::picky", mutates_args=())
def picky(x: torch.Tensor) -> torch.Tensor:
    if (x < 0).any():
        raise ValueError("picky: negative input")
    return x.sqrt()


@picky.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op(f"{LIB}::noisy", mutates_args=())
def noisy(x: torch.Tensor) -> torch.Tensor:
    CALLS["noisy"] += 1
    return x.clone()


@noisy.register_fake
def _(x):
    return torch.empty_like(x)


# torch.library.define + impl (a CPU kernel and a CompositeExplicitAutograd one) + fake
_lib.define("cube(Tensor x, int p=3) -> Tensor")
_lib.impl("cube", lambda x, p=3: x ** p, "CompositeExplicitAutograd")
torch.library.register_fake(f"{LIB}::cube", lambda x, p=3: torch.empty_like(x), lib=_lib)
_lib.define("clamp_(Tensor(a!) x, float lo) -> ()")
_lib.impl("clamp_", lambda x, lo: (x.clamp_(min=lo), None)[1], "CPU")
torch.library.register_fake(f"{LIB}::clamp_", lambda x, lo: None, lib=_lib)
_lib.define("cpu_only(Tensor x) -> Tensor")
_lib.impl("cpu_only", lambda x: x + 1, "CPU")

ops = getattr(torch.ops, LIB)


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _customs(ex):
    return sum(1 for c in ex.extern_calls if c == "custom")


def _check(fn, *args, graphs=1, breaks=0, customs=None, clone=False):
    ref_args = [a.clone() for a in args] if clone else args
    ref = _flat(fn(*ref_args))
    torchc.reset()
    cf = torchc.compile(fn)
    for _ in range(2):  # the first call compiles, the second reuses the entry
        got_args = [a.clone() for a in args] if clone else args
        got = _flat(cf(*got_args))
        assert len(got) == len(ref)
        for a, b in zip(ref, got):
            if a is None:
                assert b is None
                continue
            assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride(), (a, b)
            torch.testing.assert_close(a, b)
        for a, b in zip(ref_args, got_args):  # written arguments: eager's updates
            torch.testing.assert_close(a, b)
    ex = torchc.explain(fn)(*[a.clone() for a in args] if clone else args)
    if breaks == 0:
        assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), ex.break_reasons
    else:  # the op then runs eagerly: frames of torch's generated code inside it may add breaks
        assert ex.graph_count == graphs and ex.graph_break_count >= breaks, ex.break_reasons
    if customs is not None:
        assert _customs(ex) == customs, ex.extern_calls
    return ex


X = torch.randn(4, 5)
Y = torch.randn(4, 5)


def f_custom_op_def(x):
    return scale(x.sin(), 0.5, [1]) + 1


def f_packet(x):
    return torch.ops.torchc_tst.scale(x, 2.0, [0, 1]).relu()


def f_overload_kwargs(x):
    return ops.scale.default(x, k=-1.5, dims=[0]) * 2


def f_define_impl(x):
    return ops.cube(x) + ops.cube(x, 2) + ops.cube(x, p=1)


def f_two(x, y):
    a, b = two(x * 2, y)
    return a - 1, b.exp()


def f_parts(x):
    p = parts(x, 3)
    return p[0] + p[1] * p[2] * len(p)


def f_transposed(x):
    return transposed(x)


def f_aten(x, y):
    return torch.ops.aten.add.Tensor(x, y, alpha=2) + torch.ops.aten.mul(x, 3)


@pytest.mark.parametrize("fn,args,customs", [
    (f_custom_op_def, (X,), 1),
    (f_packet, (X,), 1),
    (f_overload_kwargs, (X,), 1),
    (f_define_impl, (X,), 3),
    (f_two, (X, Y), 1),
    (f_parts, (X,), 1),
    (f_transposed, (X,), 1),
    (f_aten, (X, Y), 2),
])
def test_custom_op_captured(fn, args, customs):
    _check(fn, *args, customs=customs)


@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (3, 7), (2, 3, 5)])
def test_custom_op_edge_shapes(shape):
    x = torch.randn(*shape)
    _check(lambda x: scale(x + 1, 3.0, [x.dim() - 1]) * 2, x, customs=1)


def test_custom_op_noncontiguous_and_broadcast_inputs():
    x = torch.randn(5, 4).t()  # a non-contiguous graph input
    _check(lambda x, y: two(x, y), x, torch.randn(4, 5), customs=1)
    _check(lambda x, y: two(x + y, y.expand(4, 5)), x, torch.randn(5), customs=1)


def test_custom_op_body_runs_once_per_call_and_is_not_traced():
    CALLS["noisy"] = 0

    def f(x):
        return noisy(x * 2) + 1

    torchc.reset()
    cf = torchc.compile(f)
    for i in range(3):
        torch.testing.assert_close(cf(X), f(X))
        assert CALLS["noisy"] == 2 * (i + 1)
    ex = torchc.explain(f)(X)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    assert _customs(ex) == 1
    # the op's own Python frames were passed through, not compiled as frames of their own
    assert ex.compile_times is not None and len(ex.graphs) == 1


def test_custom_op_written_argument():
    def f(acc, x):
        y = x.cos()
        add_into(acc, y, 0.5)
        return acc * 2

    ex = _check(f, torch.zeros(4, 5), X, clone=True, customs=1)
    assert ex.graph_count == 1

    def g(x):
        t = x * 1  # a tensor made in the graph, written, then read
        ops.clamp_(t, 0.0)
        return t + 1, x

    _check(g, X, customs=1)

    def h(acc, x):  # a view of an input written by the op
        add_into(acc[1:3], x[:2], -1.0)
        return acc.sum()

    _check(h, torch.zeros(4, 5), X, clone=True, customs=1)


@pytest.mark.allow_fallback
def test_custom_op_without_fake_breaks_with_reason():
    def f(x):
        return nofake(x + 1) * 2

    # graphs: x + 1, * 2 (a dataclass's generated __init__ (file <string>) that torch's
    # eager path of the op runs is a frame of its own with no op: no graph, as in Dynamo)
    ex = _check(f, X, graphs=2, breaks=1)
    assert any("no fake" in r for r in ex.break_reasons), ex.break_reasons

    def g(x):
        return ops.cpu_only(x + 1) * 2

    ex = _check(g, X, graphs=3, breaks=1)  # the op's Python CPU kernel runs (and compiles) as a frame
    assert any("cpu_only" in r and "fake" in r for r in ex.break_reasons), ex.break_reasons


@pytest.mark.allow_fallback
def test_custom_op_mixed_dtype_outputs_break_with_reason():
    # x * 2, then the op eagerly; the rest has no op (nor the generated __init__ above)
    ex = _check(lambda x: mixed(x * 2) + (x,), X, graphs=1, breaks=0)
    assert any("several dtypes" in r for r in ex.break_reasons), ex.break_reasons


@pytest.mark.allow_fallback
def test_custom_op_requires_grad_breaks_with_reason():
    w = torch.randn(4, 5, requires_grad=True)

    def f(x):
        return scale(x * w, 1.0, [0]).sum()

    ref = f(X)
    torchc.reset()
    got = torchc.compile(f)(X)
    torch.testing.assert_close(got, ref)
    ex = torchc.explain(f)(X)
    assert ex.graph_break_count >= 1
    assert any("require grad" in r for r in ex.break_reasons), ex.break_reasons


@pytest.mark.allow_fallback
def test_custom_op_raising_at_run_time_raises_eagers_error():
    def f(x):
        return picky(x * 1) + 1

    torchc.reset()
    cf = torchc.compile(f)
    torch.testing.assert_close(cf(X.abs()), f(X.abs()))
    with pytest.raises(ValueError, match="picky: negative input"):
        f(-X.abs())
    with pytest.raises(ValueError, match="picky: negative input"):
        cf(-X.abs())
    ex = torchc.explain(f)(X.abs())
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons


def test_custom_op_constant_args_key_the_entry():
    def f(x, k):
        return scale(x, k, [1])

    torchc.reset()
    cf = torchc.compile(f)
    for k in (1.0, 2.0, 1.0, 3.5):
        torch.testing.assert_close(cf(X, k), f(X, k))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_custom_op_cuda():
    x = X.cuda()
    _check(f_custom_op_def, x, customs=1)
    _check(f_two, x, Y.cuda(), customs=1)
