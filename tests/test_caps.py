"""No fixed cap a real model reaches (issue 21 item 4), and capture gaps found beside them.

- cat/stack (and hstack/vstack) of a sequence of any length: an RNN's steps appended in a
  Python loop and stacked (100-800 steps) broke the graph at a fixed 64 tensors; now the limit
  is torchc.config.max_cat_inputs (default 4096, named in explain's limits_hit; a compiled cat
  of many tensors stores each into its slice, tests/test_catk.py), and below it the cat is
  captured whole, forward and backward, equal to eager.
- a raise through a with block on a Python context manager: __exit__ runs with the exception
  in the trace, and suppresses it or lets it propagate, as in eager.
"""
import pytest
import torch

import torchc
from conftest import assert_same, captured_whole


def _whole(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert captured_whole(ex), str(ex)
    return ex.result


# ---- cat/stack of many tensors ----------------------------------------------------------

@pytest.mark.parametrize("n", [1, 65, 300])
@pytest.mark.parametrize("op,dim", [("stack", -1), ("cat", 1), ("vstack", None)])
def test_sequence_of_many(n, op, dim):
    xs = [torch.randn(3, 2 + i % 3 if op in ("cat", "hstack") and dim != 0 else 2) for i in range(n)]
    if op == "vstack" or (op == "cat" and dim == 0):
        xs = [torch.randn(1 + i % 2, 2) for i in range(n)]
    f = getattr(torch, op)

    def fn(xs):
        return f(xs) if dim is None else f(xs, dim)

    assert_same(_whole(fn, xs), fn(xs))


@pytest.mark.parametrize("steps", [1, 100])
def test_rnn_steps_stacked(steps):
    """H.append(h) in a Python loop over the time steps, then torch.stack(H) / torch.cat(H)"""
    def rnn(x, w):
        h = x[0] * 0
        hs = []
        for t in range(x.shape[0]):
            h = torch.tanh(h @ w + x[t])
            hs.append(h)
        return torch.stack(hs), torch.cat(hs, 1)

    x = torch.randn(steps, 2, 4)
    w = torch.randn(4, 4) * 0.4
    assert_same(_whole(rnn, x, w), rnn(x, w))


def test_mixed_dtypes_and_empties_of_many():
    xs = [torch.randn(2, 3) if i % 7 else torch.randn(2, 3).half() for i in range(90)]
    xs[40] = torch.empty(0)  # ATen's legacy rule: skipped for the shape, kept for the dtype

    def fn(xs):
        return torch.cat(xs)

    assert_same(_whole(fn, xs), fn(xs))


def test_backward_of_stack_of_many():
    n = 70
    w0 = torch.randn(4, 4) * 0.4
    x0 = torch.randn(n, 2, 4)

    def rnn(x, w):
        h = x[0]
        hs = []
        for t in range(x.shape[0]):
            h = torch.tanh(h @ w + x[t])
            hs.append(h)
        return (torch.stack(hs, 1).sin().sum() + torch.cat(hs[::2], 1).pow(2).sum())

    def run(compiled):
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        if compiled:
            torchc.reset()
            ex = torchc.explain(rnn)(x, w)
            assert captured_whole(ex) and ex.backward_graph_count == 1, str(ex)
            out = ex.result
        else:
            out = rnn(x, w)
        out.backward()
        return out.detach(), x.grad, w.grad

    got, want = run(True), run(False)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_backward_of_cat_of_many_leaves():
    xs0 = [torch.randn(2, 1 + i % 3) for i in range(300)]

    def fn(xs):
        return torch.cat(xs, 1).exp().sum() + torch.stack(xs[::3], 0).sum(1).pow(2).sum()

    def run(compiled):
        xs = [x.clone().requires_grad_() for x in xs0]
        if compiled:
            torchc.reset()
            ex = torchc.explain(fn)(xs)
            assert captured_whole(ex) and ex.backward_graph_count == 1, str(ex)
            out = ex.result
        else:
            out = fn(xs)
        out.backward()
        return [out.detach()] + [x.grad for x in xs]

    for a, b in zip(run(True), run(False)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


# ---- unbind/split/chunk/tensor_split into many views: torchc.config.max_unroll ---------

@pytest.mark.parametrize("how", ["unbind", "split", "split_list", "chunk", "tensor_split", "tensor_split_ix", "iter"])
def test_views_of_many(how):
    def fn(x):
        if how == "unbind":
            ps = x.unbind(1)
        elif how == "split":
            ps = x.split(2, 1)
        elif how == "split_list":
            ps = x.split([1, 2] * 100, 1)
        elif how == "chunk":
            ps = x.chunk(150, 1)
        elif how == "tensor_split":
            ps = torch.tensor_split(x, 120, 1)
        elif how == "tensor_split_ix":
            ps = torch.tensor_split(x, list(range(1, 300, 3)), 1)
        else:
            ps = list(x.t())
        return torch.stack([p.sum(-1) * (i + 1) for i, p in enumerate(ps)], 0)

    x = torch.randn(3, 300)
    assert_same(_whole(fn, x), fn(x))


@pytest.mark.allow_fallback
@pytest.mark.parametrize("op", ["stack", "cat"])
def test_max_cat_inputs_named_when_hit(op):
    """a limit of 64: 65 tensors break at the cat (as eager's values), 64 do not"""
    assert torchc.config.max_cat_inputs == 4096  # the default
    torchc.config.max_cat_inputs = 64
    f = getattr(torch, op)

    def fn(x):
        return f([p * 2 for p in x.unbind(0)], 0) + 1

    x = torch.randn(65, 3)
    torchc.reset()
    ex = torchc.explain(fn)(x)
    assert any("torchc.config.max_cat_inputs" in r for r in ex.limits_hit), str(ex)
    assert_same(ex.result, fn(x))
    assert_same(_whole(fn, x[:64]), fn(x[:64]))


@pytest.mark.allow_fallback
def test_max_unroll_named_when_hit():
    torchc.config.max_unroll = 50

    def fn(x):
        return torch.stack([p * 2 for p in x.unbind(0)])

    x = torch.randn(60, 2)
    torchc.reset()
    ex = torchc.explain(fn)(x)
    assert any("torchc.config.max_unroll" in r for r in ex.limits_hit), str(ex)
    torch.testing.assert_close(ex.result, fn(x))
    torchc.config.max_unroll = 60
    assert_same(_whole(fn, x), fn(x))


# ---- a raise through a with block on a Python context manager ----------------------------

class _CM:
    def __init__(self, log, suppress):
        self.log, self.suppress = log, suppress

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, et, ev, tb):
        self.log.append((et, str(ev)))
        return self.suppress and et is ValueError


class _StarCM:
    def __init__(self, log, suppress):
        self.log, self.suppress = log, suppress

    def __enter__(self):
        return self

    def __exit__(self, *exc):  # exc (the traceback with it) never read
        self.log.append(self.suppress)
        return 1 if self.suppress else None


def _with_raise(x, buf, log, suppress):
    with _CM(log, suppress):
        x = x + 1
        buf.add_(x)
        if x.shape[0] == 3:
            raise ValueError("boom")
        x = x * 3
    return x * 2


@pytest.mark.parametrize("suppress", [True, False])
def test_raise_through_with(suppress):
    def run(compiled):
        x, buf, log = torch.arange(3.0), torch.zeros(3), []
        fn = torchc.compile(_with_raise) if compiled else _with_raise
        try:
            out = fn(x, buf, log, suppress)
        except ValueError as e:
            out = ("raised", str(e))
        return out, buf, log

    torchc.reset()
    got, want = run(True), run(False)
    assert_same(got, want)
    if suppress:
        torchc.reset()
        ex = torchc.explain(_with_raise)(torch.arange(3.0), torch.zeros(3), [], True)
        assert captured_whole(ex), str(ex)


def test_raise_through_with_star_exit_and_except_outside():
    def f(x, log):
        with _StarCM(log, True):
            y = x.sin()
            raise KeyError("k")  # suppressed: __exit__ returns 1
        try:
            with torch.no_grad():
                z = x * 2
                with _StarCM(log, False):
                    raise IndexError("i")  # propagates through both blocks
        except IndexError:
            z = z + y
        return z, torch.is_grad_enabled()

    x = torch.randn(4, requires_grad=True)
    la, lb = [], []
    got = _whole(f, x, la)
    want = f(x, lb)
    assert_same(got, want)
    assert la == lb == [True, False]


@pytest.mark.allow_fallback
def test_exit_reading_the_traceback_is_left_to_eager():
    class TbCM:
        def __enter__(self):
            return self

        def __exit__(self, et, ev, tb):
            return tb is not None

    def f(x):
        with TbCM():
            x = x + 1
            raise ValueError("v")
        return x

    torchc.reset()
    ex = torchc.explain(f)(torch.ones(2))
    assert_same(ex.result, f(torch.ones(2)))
    assert any("__exit__ reads its traceback" in r for r in ex.break_reasons), ex.break_reasons


def _helper(x, log):
    with _CM(log, False):
        raise ValueError("inner")


def test_raise_through_with_in_an_inlined_call():
    def f(x, log):
        try:
            _helper(x, log)
        except ValueError as e:
            x = x * len(str(e))
        return x.cos()

    x = torch.randn(3)
    la, lb = [], []
    assert_same(_whole(f, x, la), f(x, lb))
    assert la == lb == ["enter", (ValueError, "inner")]


# ---- other fixed caps: torch.tensor of a long list, **kwargs of many, deepcopy's memo -----

def test_tensor_of_a_long_list():
    def fn(x, ids):
        return x * torch.tensor(ids) + torch.tensor([[float(i), -i / 3] for i in range(x.shape[0])]).sum(1)

    x, ids = torch.randn(150), list(range(150))
    assert_same(_whole(fn, x, ids), fn(x, ids))


def test_many_keyword_arguments():
    def inner(x, **kw):
        return x + sum(kw.values()) + len(kw)

    def fn(x):
        return inner(x, **{f"k{i}": i * 0.5 for i in range(80)})

    x = torch.randn(3)
    assert_same(_whole(fn, x), fn(x))


def test_deepcopy_memo_of_many_shared_parts():
    import copy

    def fn(x):
        parts = [[x + i] for i in range(80)]
        c = copy.deepcopy(parts + parts)  # each part reached twice: copied once
        c[150][0].add_(1)  # the copy of parts[70] (past 64 memo entries): c[70] is the same list
        return c[70][0], c[150][0] is c[70][0], c[150] is c[70], len(c)

    x = torch.randn(2)
    assert_same(_whole(fn, x), fn(x))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_stack_and_cat_of_many(dtype):
    xs0 = [torch.randn(4, 33, device="cuda", dtype=dtype) for _ in range(300)]

    def fn(xs):
        return torch.stack(xs, 1).float().sin().sum() + torch.cat(xs[::2], 1).float().pow(2).sum()

    def run(compiled):
        xs = [x.clone().requires_grad_() for x in xs0]
        if compiled:
            torchc.reset()
            ex = torchc.explain(fn)(xs)
            assert captured_whole(ex) and ex.backward_graph_count == 1, str(ex)
            out = ex.result
        else:
            out = fn(xs)
        out.backward()
        return [out.detach().float()] + [x.grad.float() for x in xs]

    tol = 1e-4 if dtype == torch.float32 else 2e-2
    for a, b in zip(run(True), run(False)):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


def test_many_tensors_made_to_require_grad():
    """more than 8 tensors made leaves in one graph (was: 'too many tensors made to require grad')"""
    def fn(x):
        ws = [torch.full((3,), 0.1 * i).requires_grad_() for i in range(12)]
        with torch.no_grad():
            vs = [torch.ones(3) * i for i in range(10)]
        for v in vs:
            v.requires_grad = True
        return sum((x * w).sin().sum() for w in ws) + sum((v * x).sum() for v in vs)

    def run(compiled):
        x = torch.linspace(-1, 1, 3, requires_grad=True)
        if compiled:
            torchc.reset()
            ex = torchc.explain(fn)(x)
            assert captured_whole(ex), str(ex)
            out = ex.result
        else:
            out = fn(x)
        out.backward()
        return out.detach(), x.grad

    assert_same(run(True), run(False))


@pytest.mark.allow_fallback
def test_sequence_repetition_follows_max_unroll():
    def fn(x):
        return x * len([x] * 5000)  # (a list of constants repeats as a constant: no limit)

    x = torch.randn(2)
    torchc.reset()
    ex = torchc.explain(fn)(x)
    assert any("torchc.config.max_unroll" in r for r in ex.limits_hit), str(ex)
    torchc.config.max_unroll = 5000
    assert_same(_whole(fn, x), fn(x))
