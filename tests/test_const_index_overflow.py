"""A constant int index beyond a C long (2**70) into a tuple/list built in the trace or an
nn.ModuleList: eager raises IndexError; torchc read PyLong_AsLong's -1 (its overflow) as the
last item and returned a value (sym.h sym_const_index). Counts pinned both ways."""
import pytest
import torch

import torchc


class _M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.ReLU()])

    def forward(self, x, i):
        return self.layers[i](x)


@pytest.mark.allow_fallback
@pytest.mark.parametrize("i", [2**70, -2**70])
def test_module_list_index_beyond_a_long_raises_as_eager(i):
    m, x = _M(), torch.randn(2)
    with pytest.raises(IndexError):
        m(x, i)
    torchc.reset()
    with pytest.raises(IndexError):
        torchc.compile(m)(x, i)
    assert torch.equal(torchc.compile(m)(x, 1), m(x, 1))  # an index in range: compiled
    s = torchc._C.stats()
    assert s["compiles"] == 1 and s["fallbacks"] == 1


def pick(x, i):
    t = (x.sin(), x.cos())
    try:
        return t[i] + 1
    except IndexError:
        return x - 1


@pytest.mark.parametrize("i", [2**70, -2**70, 5, 1])
def test_tuple_index_beyond_a_long_raises_in_the_trace(i):
    x = torch.randn(3)
    torchc.reset()
    ex = torchc.explain(pick)(x, i)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    torch.testing.assert_close(ex.result, pick(x, i))
