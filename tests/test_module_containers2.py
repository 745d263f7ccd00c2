"""Module containers other than Sequential/ModuleList: len(), iteration and indexing answer
through their own Python __len__/__iter__/__getitem__ (ParameterList, ParameterDict,
ModuleDict, a user module with __len__/__getitem__). len() of any module used to count its
submodules, so `for w in ParameterList` ran zero times in the trace and the compiled forward
returned its input unchanged (a wrong answer, found by probing unseen programs)."""
import copy

import pytest
import torch
import torch.nn as nn

import torchc


def _one_graph(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ex.op_count > 0
    return ex.result


class PL(nn.Module):
    def __init__(self, k=3, n=5):
        super().__init__()
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(n, n) * 0.3) for _ in range(k)])

    def forward(self, x):
        for w in self.ws:
            x = torch.tanh(x @ w)
        return x + len(self.ws) + self.ws[-1].sum()


@pytest.mark.parametrize("shape", [(6, 5), (1, 5), (0, 5)])
def test_parameter_list_iteration_len_index(shape):
    torch.manual_seed(0)
    m = PL()
    x = torch.randn(*shape)
    want = m(x)
    got = _one_graph(m, x)
    torch.testing.assert_close(got, want)


def test_parameter_list_training_grads_match_eager():
    torch.manual_seed(0)
    m1 = PL()
    m2 = copy.deepcopy(m1)
    cm = torchc.compile(m2)
    x = torch.randn(4, 5)
    for _ in range(3):
        m1(x).sum().backward()
        cm(x).sum().backward()
        for p1, p2 in zip(m1.parameters(), m2.parameters()):
            torch.testing.assert_close(p2.grad, p1.grad)
        with torch.no_grad():
            for p1, p2 in zip(m1.parameters(), m2.parameters()):
                p1 -= 0.1 * p1.grad
                p2 -= 0.1 * p2.grad
                p1.grad = p2.grad = None


def test_parameter_list_append_after_compile_recompiles():
    torch.manual_seed(0)
    m = PL(k=2)
    x = torch.randn(3, 5)
    cm = torchc.compile(m)
    torchc.reset()
    torch.testing.assert_close(cm(x), m(x))
    m.ws.append(nn.Parameter(torch.randn(5, 5) * 0.3))
    torch.testing.assert_close(cm(x), m(x))  # the length is guarded: 3 layers now


class PD(nn.Module):
    def __init__(self):
        super().__init__()
        self.pd = nn.ParameterDict({"a": nn.Parameter(torch.randn(4)), "b": nn.Parameter(torch.randn(4))})
        self.md = nn.ModuleDict({"l1": nn.Linear(4, 4), "l2": nn.Linear(4, 4)})

    def forward(self, x):
        for k in self.pd:
            x = x * self.pd[k]
        for name, mod in self.md.items():
            x = mod(x)
        return x + len(self.pd) + len(self.md)


def test_parameter_dict_and_module_dict():
    torch.manual_seed(0)
    m = PD()
    x = torch.randn(3, 4)
    torch.testing.assert_close(_one_graph(m, x), m(x))


class Stack(nn.Module):
    """a user module with its own __len__/__getitem__ over a plain list of modules"""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.a, self.b)[i]

    def forward(self, x):
        for i in range(len(self)):
            x = torch.relu(self[i](x))
        return x


def test_user_module_len_and_getitem():
    torch.manual_seed(0)
    m = Stack()
    x = torch.randn(2, 4)
    torch.testing.assert_close(_one_graph(m, x), m(x))


def test_sequential_len_still_counts_submodules():
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))

    def f(x):
        return m[len(m) - 1](x) * len(m)

    x = torch.randn(2, 3)
    torch.testing.assert_close(_one_graph(f, x), f(x))
