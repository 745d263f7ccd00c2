"""Patterns from transformers' modelling code (tests/test_models_tiny.py measures the models):
each compiled differentially against eager, with graph/break counts from torchc.explain so a
silent fallback fails."""
import torch

import torchc


def _whole(fn, *args):
    """fn compiled: one graph, no break, same values, dtypes and shapes as eager."""
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    want = fn(*args)
    got = ex.result
    if isinstance(want, torch.Tensor):
        want, got = (want,), (got,)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        torch.testing.assert_close(g, w)
    return ex


def test_tensor_new_factories():
    # masking_utils.and_mask: q_idx.new_ones((), dtype=torch.bool)
    def f(x, i):
        return (i.new_ones((), dtype=torch.bool) & (x > 0), x.new_zeros(2, 3), x.new_zeros((0,)),
                x.new_full((3,), 2.5) * x[:3], i.new_full((2,), 7), x.new_ones(1, 5, dtype=torch.float64),
                x.new_empty((2, 0)))
    _whole(f, torch.randn(5), torch.arange(4))


def test_index_several_tensors():
    # masking_utils.packed_sequence_mask_function: mask[batch_idx, q_idx] == mask[batch_idx, kv_idx]
    # with broadcasting arange indices; remap_positions: position_ids[b, q] used as an index again
    def f(m, pos):
        b = torch.arange(2)[:, None, None, None]
        q = torch.arange(5)[None, None, :, None]
        kv = torch.arange(5)[None, None, None, :]
        qq = pos[b, q]
        return m[b, q] == m[b, kv], m[b, qq], m[torch.arange(2), torch.arange(2) + 1]

    m = torch.randint(0, 3, (2, 5))
    pos = torch.arange(5).expand(2, 5).contiguous()
    _whole(f, m, pos)


def test_index_several_tensors_placement():
    # adjacent indexed dims: the broadcast shape replaces them; separated: it comes first
    def f(x, i, j):
        return x[:, i, j], x[i, :, j], x[..., i[:, None], j], x[1:, i, j]

    x = torch.randn(3, 4, 5, 6)
    i = torch.tensor([0, 2, 1])
    j = torch.tensor([4, 0, 3])
    _whole(f, x, i, j)


def test_index_several_tensors_out_of_range_runs_eagerly():
    # index inputs are checked before each run: an out-of-range one runs eagerly (eager raises)
    import pytest

    def f(x, i, j):
        return x[i, j] * 2

    cf = torchc.compile(f)
    x = torch.randn(3, 4)
    torch.testing.assert_close(cf(x, torch.tensor([0, 2]), torch.tensor([3, 1])),
                               f(x, torch.tensor([0, 2]), torch.tensor([3, 1])))
    with pytest.raises(IndexError):
        cf(x, torch.tensor([0, 3]), torch.tensor([3, 1]))
    with pytest.raises(IndexError):
        f(x, torch.tensor([0, 3]), torch.tensor([3, 1]))
    torch.testing.assert_close(cf(x, torch.tensor([-1, 0]), torch.tensor([3, -4])),
                               f(x, torch.tensor([-1, 0]), torch.tensor([3, -4])))


def test_computed_index_checked_after_the_kernels():
    # OPT's learned positions (cumsum of the attention mask) and T5's relative-position
    # buckets index an embedding with values no range analysis bounds: the graph counts the
    # out-of-range elements; one out of range runs the frame eagerly (which raises)
    import pytest

    emb = torch.nn.Embedding(10, 4)

    def f(mask, w):
        pos = (torch.cumsum(mask, dim=1) * mask - 1).long() + 2
        return emb(pos) * w, w.sum()

    with torch.no_grad():
        m = torch.ones(2, 6, dtype=torch.long)
        m[1, :2] = 0
        w = torch.randn(4)
        torchc.reset()
        ex = _whole(f, m, w)
        cf = torchc.compile(f)
        torch.testing.assert_close(cf(m, w)[0], f(m, w)[0])
        for big in (m * 3, torch.ones(2, 9, dtype=torch.long)):  # positions past 9
            with pytest.raises(IndexError):
                f(big, w)
            with pytest.raises(IndexError):
                cf(big, w)
        neg = m.clone()
        neg[0, 0] = -5
        with pytest.raises(IndexError):
            cf(neg, w)
        torch.testing.assert_close(cf(m, w)[0], f(m, w)[0])
    assert ex.op_count > 0


def _gelu_forward(x):
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


class _Gelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale=1.0):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return _gelu_forward(x) * scale  # a global of the forward's module

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.scale, None


class _Twice(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output)

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_autograd_function_inlined_without_grad():
    # BLOOM's GeLUFunction.apply in inference: with grad mode off apply is its forward
    def f(x):
        return _Gelu.apply(x, 2.0) + 1, _Twice.apply(x)

    x = torch.randn(3, 5)
    with torch.no_grad():
        _whole(f, x)

    def g(x):
        with torch.no_grad():
            y = _Gelu.apply(x)
        return y.sum()
    _whole(g, x)


def test_autograd_function_with_grad_captured():
    # forward and the user's backward captured (tests/test_training_autograd_fn.py has more)
    def f(x):
        return _Gelu.apply(x) * 3

    x = torch.randn(4, requires_grad=True)
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    ex.result.sum().backward()
    g1 = x.grad.clone()
    x.grad = None
    f(x).sum().backward()
    torch.testing.assert_close(g1, x.grad)


def test_functools_partial_call():
    # transformers' GELUTanh: self.act = functools.partial(F.gelu, approximate="tanh")
    import functools

    def scaled(x, a, b=1.0, *, c=0.0):
        return x * a + b + c

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.act = functools.partial(torch.nn.functional.gelu, approximate="tanh")
            self.aff = functools.partial(scaled, a=2.0, c=0.5)
            self.pos = functools.partial(scaled, 3.0)

        def forward(self, x):
            return self.act(x), self.aff(x), self.aff(x, b=3.0, c=1.0), self.pos(torch.tensor(2.0), x)

    with torch.no_grad():
        m, x = M(), torch.randn(4, 3)
        _whole(m, x)
        cm = torchc.compile(m)
        cm(x)
        m.act = functools.partial(torch.nn.functional.gelu, approximate="none")  # guarded
        m.aff = functools.partial(scaled, a=-1.0)
        for g, w in zip(cm(x), m(x)):
            torch.testing.assert_close(g, w)
