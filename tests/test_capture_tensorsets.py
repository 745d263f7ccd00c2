"""Tensors in sets and `in` tests by identity (issue 21: XLNet's and optimizer-style
`param in memo`), classes' slices held by closures. A tensor read from a source is its own
object in the trace's set, its source identity-guarded (obj_tensorset.c); iterating the set
gives back the tracked values. Graph/break counts pinned both ways."""
import torch

import torchc


def _whole(fn, *args):
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    torch.testing.assert_close(ex.result, want)
    return ex


def dedup_sum(x, ps):
    memo = set()
    out = x
    for p in ps:
        if p in memo:
            continue
        memo.add(p)
        out = out + p
    return out * len(memo)


def test_set_of_tensors_dedups_by_identity():
    a, b = torch.randn(4), torch.randn(4)
    _whole(dedup_sum, torch.randn(4), [a, b, a])
    cf = torchc.compile(dedup_sum)
    x = torch.randn(4)
    c = torch.randn(4)
    for ps in ([a, b, a], [a, b, a], [a, b, c], [c, c, c], [a, a, b]):
        torch.testing.assert_close(cf(x, ps), dedup_sum(x, ps))


def test_equal_values_are_distinct_members():
    a = torch.ones(3)
    b = torch.ones(3)  # equal values, different objects: two members
    _whole(dedup_sum, torch.zeros(3), [a, b])


def test_parameters_memo_over_tied_weights():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(4, 4)
            self.b = torch.nn.Linear(4, 4)
            self.b.weight = self.a.weight  # tied

        def forward(self, x):
            seen = set()
            total = x.sum() * 0
            for w in (self.a.weight, self.b.weight, self.a.bias, self.b.bias):
                if w not in seen:
                    seen.add(w)
                    total = total + w.sum()
            return self.b(self.a(x)) + total

    m = Tied()
    _whole(m, torch.randn(2, 4))


def test_set_of_tensors_iterated():
    def f(x, a, b):
        s = {a, b, a}
        out = x
        for t in s:  # order of ids: eager's set order, replayed
            out = out * 2 + t
        return out
    a, b = torch.randn(3), torch.randn(3)
    _whole(f, torch.randn(3), a, b)


def test_closure_slice():
    def make(sl):
        def g(x):
            return x[sl] * 2
        return g
    for sl in (slice(1, 3), slice(None, None, 2), slice(-2, None)):
        g = make(sl)
        _whole(g, torch.randn(5))
