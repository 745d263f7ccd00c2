"""Graph breaks inside with blocks and try blocks resume (issue 21): the graph before the
break is compiled, the breaking instruction runs eagerly inside the real contexts (entered
around it: entry_run.c run_break) and the rest of the block continues in a resume function
whose prologue enters an equal context again (resume.c; no_grad, inference_mode, autocast).
An exception the instruction raises goes to the block's own handler (the with block's exit,
an except clause) as in eager. Differential against eager: results, dtypes, requires_grad,
the grad/inference/autocast state the break sees and the state after the block; graph and
break counts pinned exactly (a silent eager fallback fails)."""
import contextlib

import pytest
import torch

import torchc

seen = []


def _inner():
    """the state read inside compiled code (the trace answers it)"""
    return torch.is_grad_enabled(), torch.is_autocast_enabled("cpu")


def _state():
    return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.is_autocast_enabled("cpu"),
            torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else None)


@torch.compiler.disable
def opaque(x):
    """never traced: the trace breaks at its call; records the state it runs in"""
    seen.append(_state())
    return x


@torch.compiler.disable
def boom(x):
    seen.append(_state())
    raise ValueError("boom")


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
        assert a.is_inference() == b.is_inference()
        torch.testing.assert_close(a.detach(), b.detach())
    else:
        assert a == b


def _check(fn, args, graphs, breaks):
    """eager vs explain vs compiled (twice: the cached entries and resume functions)"""
    seen.clear()
    before = _state()
    want = fn(*args)
    want_seen = list(seen)
    assert _state() == before
    torchc.reset()
    seen.clear()
    ex = torchc.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), ex.break_reasons
    assert not any("not resumable" in str(r) for r in ex.break_reasons), ex.break_reasons
    _same(ex.result, want)
    assert seen == want_seen  # the break ran once, in eager's state
    assert _state() == before
    cf = torchc.compile(fn)
    for _ in range(2):
        seen.clear()
        _same(cf(*args), want)
        assert seen == want_seen
        assert _state() == before
    return ex


# ---- with blocks on torch's state contexts ------------------------------------------------

def no_grad_block(x):
    y = x.sin()
    with torch.no_grad():
        y = opaque(y * 2)
        z = y.cos() + 1
    return z * x, torch.is_grad_enabled()


def inference_block(x):
    y = x + 1
    with torch.inference_mode():
        y = opaque(y)  # (a tensor made inside the block leaving a graph is not captured)
        n = y.shape[0] + 1
    return y * n


def autocast_block(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
        y = opaque(y)
        z = y @ w
    return z, z.dtype, torch.is_autocast_enabled("cpu"), (z.float() @ w).dtype


def nested_blocks(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
        with torch.no_grad():
            y = opaque(y) @ w
            z = y.relu()
        u = z @ w
    return u, torch.is_grad_enabled(), torch.is_autocast_enabled("cpu")


def as_target(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16) as ac:
        y = opaque(x @ w)
        z = y @ w
    return z, type(ac).__name__


def branch_in_block(x):
    with torch.no_grad():
        y = x * 2
        if y.sum() > 0:  # data-dependent: a break on a jump inside the block
            y = y + 1
        else:
            y = y - 1
        z = y.exp()
    return z * x


def moe_like(x, idx):
    # openai_privacy_filter's expert loop: nonzero() inside no_grad, a loop over its rows
    out = torch.zeros_like(x)
    with torch.no_grad():
        hit = torch.greater(torch.nn.functional.one_hot(idx, 4).sum(0), 0).nonzero()
    for e in hit:
        out = out + x * (e[0] + 1)
    return out


def loop_of_blocks(x):
    for i in range(3):
        with torch.no_grad():
            x = opaque(x + i) * 2
    return x


def block_then_more(x):
    with torch.no_grad():
        a = opaque(x.sin())
    b = a * x  # grad mode back on after the block, as in eager
    return b, a.requires_grad, b.requires_grad


@pytest.mark.parametrize("requires_grad", [False, True])
def test_break_inside_no_grad(requires_grad):
    x = torch.randn(4, 3, requires_grad=requires_grad)
    _check(no_grad_block, (x,), graphs=2, breaks=1)


def test_break_inside_inference_mode():
    _check(inference_block, (torch.randn(5),), graphs=2, breaks=1)


@pytest.mark.parametrize("shape", [(4, 4), (1, 1), (3, 5)])
def test_break_inside_autocast(shape):
    x, w = torch.randn(shape[0], shape[1]), torch.randn(shape[1], shape[1])
    _check(autocast_block, (x, w), graphs=2, breaks=1)


def test_break_inside_nested_blocks():
    _check(nested_blocks, (torch.randn(3, 4), torch.randn(4, 4)), graphs=2, breaks=1)


def test_break_inside_autocast_with_as_target():
    _check(as_target, (torch.randn(2, 4), torch.randn(4, 4)), graphs=2, breaks=1)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_data_dependent_branch_inside_no_grad(sign):
    x = sign * torch.rand(6, requires_grad=True) + sign * 0.1
    _check(branch_in_block, (x,), graphs=2, breaks=1)


def test_nonzero_inside_no_grad_then_loop():
    x = torch.randn(3, 5)
    idx = torch.tensor([[0, 2], [2, 3], [0, 0]])
    ex = _check(moe_like, (x, idx), graphs=2, breaks=1)
    assert "nonzero" in str(ex.break_reasons[0])


def test_break_inside_a_block_in_a_loop():
    _check(loop_of_blocks, (torch.randn(4, requires_grad=True),), graphs=4, breaks=3)


def test_grad_mode_after_the_block():
    _check(block_then_more, (torch.randn(3, requires_grad=True),), graphs=2, breaks=1)


# ---- exceptions at the break ---------------------------------------------------------------

def raise_in_block_caught(x):
    y = x.sin()
    try:
        with torch.no_grad():
            y = boom(y)
    except ValueError:
        y = y * 2  # the block's exit ran: grad mode restored here
        st = _inner()
    return y, st


def raise_in_block_uncaught(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = boom(x @ x)
    return y


def try_inside_block(x):
    with torch.no_grad():
        try:
            y = boom(x)
        except ValueError:
            y = x + 1
            st = _inner()  # still inside the block: grad off
        z = opaque(y) * 2
    return z, st, _inner()


def test_exception_inside_a_block_caught_outside_it():
    x = torch.randn(3, requires_grad=True)
    # the rest of a frame after an exception runs as it is (resume.c dh_make_exc_resume);
    # _inner's own frame, called from there, has no op: no graph
    _check(raise_in_block_caught, (x,), graphs=1, breaks=0)


@pytest.mark.allow_fallback
def test_exception_inside_a_block_propagates_and_leaves_the_state():
    x = torch.randn(3, 3)
    before = _state()
    with pytest.raises(ValueError, match="boom"):
        raise_in_block_uncaught(x)
    assert _state() == before
    torchc.reset()
    cf = torchc.compile(raise_in_block_uncaught)
    for _ in range(2):
        with pytest.raises(ValueError, match="boom"):
            cf(x)
        assert _state() == before


def test_try_inside_a_block():
    # the exception at the first break: the rest of the frame runs as it is, its two _inner()
    # calls compiled as frames of their own
    _check(try_inside_block, (torch.randn(4, requires_grad=True),), graphs=0, breaks=0)


# ---- try blocks -----------------------------------------------------------------------------

def try_break(x, d):
    y = x.cos()
    try:
        y = opaque(y) + d["k"]
    except KeyError:
        y = y - 1
    return y * 2


def try_raise(x):
    y = x.exp()
    try:
        y = boom(y)
    except ValueError as e:
        y = y + len(str(e))
    finally:
        y = y * 3
    return y


@pytest.mark.parametrize("d", [{}, {"k": 2.0}])
def test_break_inside_try(d):
    _check(try_break, (torch.randn(4), d), graphs=2, breaks=1)


def test_exception_at_the_break_inside_try_finally():
    _check(try_raise, (torch.randn(4),), graphs=1, breaks=0)


# ---- a user's context manager: entered once, eagerly, at a break (test_resume_user_with.py) -

def test_user_context_manager_break_resumes_under_its_state():
    log = []

    @contextlib.contextmanager
    def tag():
        log.append("in")
        with torch.no_grad():
            yield
        log.append("out")

    def f(x):
        with tag():
            y = opaque(x * 2)
            z = y * 3  # grad off here in eager: the generator's no_grad is entered
        return y + 1, z.requires_grad, torch.is_grad_enabled()

    x = torch.randn(3, requires_grad=True)
    want = f(x)
    log.clear()
    torchc.reset()
    ex = torchc.explain(f)(x)
    _same(ex.result, want)
    assert log == ["in", "out"]
    assert ex.op_count >= 2 and "not resumable" not in " ".join(map(str, ex.break_reasons))


# ---- a closure over a cell assigned after the break ---------------------------------------
# The function made before the break and the resume frame share one real cell (sym_output.c
# shared_cell): writes after the break are replayed on it, and the function reads the
# frame's value in the trace.

def cell_after(x):
    k = 3
    g = lambda t: t * k  # noqa: E731
    y = opaque(x.sin())
    k = 5  # g sees 5, as in eager
    return g(y) + k


def cell_twice(x):
    k = 2
    g = lambda t: t * k  # noqa: E731
    y = opaque(x.cos())
    a = g(y)
    k = k + 1
    return a, g(y), g  # g leaves the frame: its cell holds 3 afterwards


def cell_in_loop(x, n):
    acc = 0

    def add(t):
        return t + acc
    outs = []
    for i in range(n):
        y = opaque(x * i)
        acc = i * 10
        outs.append(add(y))
    return outs


def cell_nested(x):
    scale = 1.0

    def outer(t):
        def inner(u):
            return u * scale
        return inner(t) + scale
    y = opaque(x + 1)
    scale = 4.0
    return outer(y)


def test_closure_over_a_cell_assigned_after_the_break():
    _check(cell_after, (torch.randn(4),), graphs=2, breaks=1)


def test_closure_over_a_cell_assigned_after_the_break_leaves_the_frame():
    x = torch.randn(3)
    want = cell_twice(x)
    torchc.reset()
    ex = torchc.explain(cell_twice)(x)
    assert (ex.graph_count, ex.graph_break_count) == (2, 1), ex.break_reasons
    cf = torchc.compile(cell_twice)
    for got in (ex.result, cf(x), cf(x)):
        _same(got[:2], want[:2])
        assert got[2].__closure__[0].cell_contents == want[2].__closure__[0].cell_contents == 3
        _same(got[2](torch.ones(2)), want[2](torch.ones(2)))


def test_closure_over_a_cell_assigned_in_a_loop_with_a_break():
    _check(cell_in_loop, (torch.randn(3), 3), graphs=4, breaks=3)


def test_nested_closures_over_a_cell_assigned_after_the_break():
    _check(cell_nested, (torch.randn(5),), graphs=2, breaks=1)


# ---- a break at a subscript the graph can't hold --------------------------------------------
# x[mask] (a data-dependent shape) runs eagerly between two graphs as operator.getitem
# (sym_containers.c), as a call would; was: the frame ran eagerly.

def mask_read(x, m):
    y = x.sin() * 2
    z = y[m]
    return z.cos() + 1, y.sum()


def mask_read_in_block(h, m):
    with torch.no_grad():
        sel = h[m] * 2
        h = h.masked_fill(m.unsqueeze(-1), 0.0)
        h = h + sel.sum()
    return h * 3, torch.is_grad_enabled()


@pytest.mark.parametrize("pattern", ["some", "none", "all"])
def test_boolean_mask_read_breaks_and_resumes(pattern):
    x = torch.randn(7)
    m = {"some": x > 0, "none": torch.zeros(7, dtype=torch.bool), "all": torch.ones(7, dtype=torch.bool)}[pattern]
    _check(mask_read, (x, m), graphs=2, breaks=1)


def test_boolean_mask_read_inside_no_grad():
    h = torch.randn(4, 3, requires_grad=True)
    _check(mask_read_in_block, (h, torch.tensor([True, False, True, True])), graphs=1, breaks=0)
