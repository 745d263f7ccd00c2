"""A reshape / flatten eager answers with a copy (its input's strides can't express the new
shape: a transposed intermediate, merged attention heads) is a fresh tensor computed inside
the graph: the graph's output is the reshaped value, contiguous as eager's copy, in one
pass (not the transposed base returned and reshaped again outside). A reshape eager makes a
view of stays a view. And a .view() eager refuses is refused (CPU attention: contiguous)."""
import re

import pytest
import torch
import torch.nn.functional as F

import torchc


def _explain(f, *args):
    torchc.reset()
    ex = torchc.explain(f)(*args)
    want = f(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    got = ex.result
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want)
    assert got.stride() == want.stride(), (got.stride(), want.stride())
    return ex


def _output_op(ex):
    """the op of graph 0's first output value"""
    s = str(ex)
    m = re.search(r"output 0 = %(\d+)", s)
    assert m, s
    op = re.search(r"%" + m.group(1) + r" = (\w+)", s)
    return op.group(1)


@pytest.mark.parametrize("shape", [(64, 48), (1, 7), (5, 1), (3, 0)], ids=str)
def test_transposed_reshape_in_graph(shape):
    x = torch.randn(*shape)
    ex = _explain(lambda x: (x.T + 1).reshape(-1), x)
    assert ex.op_count == 3, str(ex)
    if 0 not in shape and 1 not in shape:
        assert _output_op(ex) == "reshape", str(ex)


def test_flatten_merge_heads():
    x = torch.randn(2, 4, 16, 8)

    def f(x):
        return (x * 2).transpose(1, 2).flatten(2)

    ex = _explain(f, x)
    assert _output_op(ex) == "reshape", str(ex)


def test_reshape_merge_heads_sdpa_cpu():
    q, k, v = (torch.randn(2, 4, 16, 8) for _ in range(3))

    def f(q, k, v):
        o = F.scaled_dot_product_attention(q, k, v)
        return o.transpose(1, 2).reshape(2, 16, 32)

    ex = _explain(f, q, k, v)
    assert _output_op(ex) == "reshape", str(ex)


def test_view_after_sdpa_cpu_raises_like_eager():
    q, k, v = (torch.randn(2, 4, 16, 8) for _ in range(3))

    def f(q, k, v):
        o = F.scaled_dot_product_attention(q, k, v)
        return o.transpose(1, 2).view(2, 16, 32)

    with pytest.raises(RuntimeError):
        f(q, k, v)
    torchc.reset()
    with pytest.raises(RuntimeError):
        torchc.compile(f)(q, k, v)


def test_viewable_reshape_stays_view():
    x = torch.randn(6, 4)

    def f(x):
        return x.reshape(4, 6), x.T.reshape(-1)

    torchc.reset()
    a, b = torchc.compile(f)(x)
    ea, eb = f(x)
    assert a.data_ptr() == x.data_ptr() and a._base is not None  # a view of the input, as eager's
    assert b.data_ptr() != x.data_ptr()  # eager copied
    torch.testing.assert_close(a, ea)
    torch.testing.assert_close(b, eb)
    assert b.stride() == eb.stride()
