"""Ops lowered by decomposition in the capture layer: compiled vs eager, one graph each."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from conftest import assert_same, explain_of

CASES = {
    "softplus": lambda x: F.softplus(x) + F.softplus(x, beta=2.0, threshold=5.0),
    "elu": lambda x: F.elu(x) + F.elu(x, alpha=0.5),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "hardswish": lambda x: F.hardswish(x),
    "hardsigmoid": lambda x: F.hardsigmoid(x),
    "relu6": lambda x: F.relu6(x * 4),
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.5),
    "mish": lambda x: F.mish(x),
    "logsigmoid": lambda x: F.logsigmoid(x * 10),
    "selu": lambda x: torch.selu(x),
    "softsign": lambda x: F.softsign(x),
    "var": lambda x: x.var(-1) + torch.var(x, 0, keepdim=True).sum() + x.var(),
    "std": lambda x: x.std(-1, correction=0) + torch.std(x, unbiased=False),
    "logsumexp": lambda x: torch.logsumexp(x, -1) + x.logsumexp(0, keepdim=True).sum(),
    "any_all": lambda x: ((x > 1).any(-1), (x > -3).all(), torch.any(x > 0, 0)),
    "norm": lambda x: (x.norm(), x.norm(1, -1), torch.norm(x, dim=0, keepdim=True), x.norm(float("inf"), -1)),
    "masked_fill": lambda x: x.masked_fill(x > 0, -1.0),
    "addcmul": lambda x: torch.addcmul(x, x, x, value=0.5) + torch.addcdiv(x, x, x.abs() + 1),
    "lerp": lambda x: torch.lerp(x, x * 2, 0.3),
    "tril_triu": lambda x: (x.tril(), torch.triu(x, 1), x.tril(-1)),
    "flip_roll": lambda x: (x.flip(0), torch.flip(x, (0, 1)), x.roll(1, 0), torch.roll(x, (2, -1), (0, 1))),
    "type_as_repeat": lambda x: (x.type_as(torch.zeros(1, dtype=torch.float64)), x.repeat(2, 1), x.repeat(2, 1, 3)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_decomposition(name):
    fn = CASES[name]
    cf = torchc.compile(fn)
    for x in (torch.randn(5, 7), torch.randn(7, 5).t(), torch.randn(1, 3)):
        assert_same(cf(x), fn(x), rtol=1e-4, atol=1e-5)
    ex = explain_of(fn, torch.randn(5, 7))
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex


def test_batch_norm_eval_and_training_update_running_stats():
    m1, m2 = nn.BatchNorm2d(3), nn.BatchNorm2d(3)
    m2.load_state_dict(m1.state_dict())
    x = torch.randn(4, 3, 5, 5)
    cm = torchc.compile(m1)
    with torch.no_grad():
        for _ in range(2):  # training: batch statistics, running stats updated in place
            assert_same(cm(x), m2(x), rtol=1e-4, atol=1e-5)
        assert_same(m1.running_mean, m2.running_mean, rtol=1e-5, atol=1e-6)
        assert_same(m1.running_var, m2.running_var, rtol=1e-5, atol=1e-6)
        assert int(m1.num_batches_tracked) == int(m2.num_batches_tracked) == 2
        m1.eval(), m2.eval()
        assert_same(cm(x), m2(x), rtol=1e-4, atol=1e-5)


def test_group_norm_module():
    m = nn.GroupNorm(2, 6)
    x = torch.randn(3, 6, 4, 4)
    with torch.no_grad():
        assert_same(torchc.compile(m)(x), m(x), rtol=1e-4, atol=1e-5)
        ex = torchc.explain(torchc.compile(m))(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex


def test_clone_and_nan_to_num():
    def f(x):
        c = x.clone()
        c.add_(1)                      # the clone is a new tensor: x unchanged
        y = torch.log(x)               # NaN for negatives, -inf at 0
        return c, torch.nan_to_num(y), y.nan_to_num(nan=1.0, posinf=2.0, neginf=-2.0), x

    x1 = torch.tensor([[-1.0, 0.0, 2.0], [float("inf"), 3.0, -0.5]])
    x2 = x1.clone()
    assert_same(torchc.compile(f)(x1), f(x2))
    assert_same(x1, x2)
    assert explain_of(f, x1).graph_count == 1
