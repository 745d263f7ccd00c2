"""Idioms of real model code that broke graphs, each as a differential test against eager
with graph/break counts: sequence comparisons of sizes (ProphetNet's
`assert list(h.size()) == [b, t, d]`), and a dict or list against a string or number
(transformers' rope wrapper: `rope_type == "longrope"` with a dict of rope types per layer)."""
import pytest
import torch

import torchc


def _run(fn, *args, graphs=1, breaks=0):
    ref = fn(*args)
    torchc.reset()
    got = torchc.compile(fn)(*args)
    assert type(got) is type(ref)
    if isinstance(ref, torch.Tensor):
        torch.testing.assert_close(got, ref, rtol=1e-6, atol=1e-6)
    else:
        assert got == ref
    ex = torchc.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), ex.break_reasons


def f_assert_size(x):
    b, t, h = x.size()
    # what `assert list(x.size()) == [b, t, h]` compiles to (pytest rewrites asserts in this file)
    if not list(x.size()) == [b, t, h]:
        raise AssertionError("shape")
    return x + 1


def f_compare_kinds(x):
    b, t, h = x.size()
    flags = (list(x.shape) == [b, t, h], list(x.shape) != [b, t, h], tuple(x.shape) == [b, t, h],
             [b, t] < [b, t + 1], [(b, t), [h]] == [(b, t), [h]], list(x.shape[:2]) == [b, t, 0], x.shape == (b, t, h))
    return x * sum(flags)


def f_branch_on_list(x):
    if list(x.shape[1:]) == [3, 4]:
        return x.sum(-1)
    return x.mean(-1)


def f_dict_vs_str(x):
    kinds = {"full": "default", "sliding": "dynamic"}
    sizes = [x.shape[0], 3]
    flags = (kinds == "longrope", kinds != "longrope", sizes == 2, sizes != None, (1, 2) == 1.5,  # noqa: E711
             "dynamic" in kinds)
    return x * sum(int(f) for f in flags) + (1 if sizes == "x" else 2)


@pytest.mark.parametrize("fn", [f_assert_size, f_compare_kinds, f_branch_on_list, f_dict_vs_str], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 1, 1), (0, 3, 4), (5, 2, 7)])
def test_sequence_compare(fn, shape):
    _run(fn, torch.randn(shape))


@pytest.mark.no_compile
def test_sequence_with_tensor_items_is_not_folded():
    # a list holding a tensor is not a constant: never folded to a wrong answer
    def f(x):
        return x + 1 if [x.sum() > 0] == [True] else x - 1
    x = torch.ones(3)
    torchc.reset()
    assert torch.equal(torchc.compile(f)(x), f(x))
