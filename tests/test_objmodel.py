"""The Python object model under torchc: user classes with __getattr__, context variables,
lists with identity and mutation, sets. Each test compares with eager (values and the
state of the objects the caller holds) and asserts the code was compiled (graph count,
no break), so a silent fallback fails it."""
import contextvars

import pytest
import torch

import torchc
from conftest import assert_same


def whole(fn, *args, graphs=1):
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert_same(ex.result, want)
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex
    return ex


class Lazy:
    """__getattr__ in Python: runs once per read in eager, so it must under torchc."""
    def __init__(self):
        self.log = 0
        self.base = 3.0

    def __getattr__(self, name):
        if name.startswith("scale"):
            return self.base * (len(name) - 4)
        raise AttributeError(name)


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_getattr_runs_as_often_as_in_eager():
    calls = []

    class Counting:
        def __getattr__(self, name):
            calls.append(name)
            return 2.0

    o = Counting()

    def f(x, o):
        return x * o.scale

    cf = torchc.compile(f)
    for _ in range(3):
        assert_same(cf(torch.ones(2), o), torch.ones(2) * 2.0)
    assert calls == ["scale"] * 3


def test_getattr_inlined_and_guarded():
    def f(x, o):
        return x * o.scale + o.scale2 + o.base

    o = Lazy()
    whole(f, torch.randn(4), o)
    cf = torchc.compile(f)
    o.base = 5.0                      # read through the inlined __getattr__: guarded
    assert_same(cf(torch.ones(2), o), f(torch.ones(2), o))
    o.scale = 100.0                   # now an instance attribute: __getattr__ no longer runs
    assert_same(cf(torch.ones(2), o), f(torch.ones(2), o))


FLAG = contextvars.ContextVar("flag", default=None)


def test_contextvar_get_outside_the_trace_is_guarded():
    def f(x):
        v = FLAG.get()
        return x * 2 if v is None else x * v

    cf = torchc.compile(f)
    x = torch.randn(3)
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    assert_same(cf(x), x * 2)
    tok = FLAG.set(3)
    try:
        assert_same(cf(x), x * 3)
    finally:
        FLAG.reset(tok)
    assert_same(cf(x), x * 2)


# ---- lists with identity and mutation ------------------------------------------------

def test_list_methods_with_aliases():
    def f(x):
        outs = []
        alias = outs
        for i in range(3):
            outs.append(x * i)
        outs.extend([x + 1, x + 2])
        outs.insert(1, x - 5)
        last = outs.pop()
        first = outs.pop(0)
        keys = ["a", "b", "c"]
        keys.remove("b")
        outs.reverse()
        outs += [x * 10]
        n = len(alias)
        return sum(alias) + first + last + n, alias is outs, keys, keys.index("c")

    whole(f, torch.randn(4))


def test_list_setitem_delitem_slices():
    def f(x):
        l = [x, x + 1, x + 2, x + 3, x + 4]
        l[1] = x * 7
        l[-1] = l[0] - 1
        del l[2]
        l[1:3] = [x * 2, x * 3, x * 4]
        del l[::2]
        l[::-1] = l[:]
        c = l.copy()
        c.clear()
        return tuple(l), len(c), l.index(l[0]), l.count(l[0]) if len(l) == 1 else len(l)

    whole(f, torch.randn(3))


def test_list_made_in_a_helper_and_mutated_there():
    def add(acc, v):
        acc.append(v * 2)
        return len(acc)

    def f(x):
        acc = [x]
        n = add(acc, x) + add(acc, x + 1)
        return torch.stack(acc).sum(0) + n

    whole(f, torch.randn(5))


def test_constant_list_sort_and_tuple_concat():
    def f(x):
        dims = [2, 0, 1]
        dims.sort()
        hs = ()
        for d in dims:
            hs = hs + (x.sum(d),)
        rep = [x] * 2
        return hs, rep, dims

    whole(f, torch.randn(2, 3, 4))


def test_list_passed_in_is_left_to_eager():
    def f(x, l):
        l.append(x + 1)
        return x * 2

    l1, l2 = [], []
    x = torch.randn(3)
    want = f(x, l1)
    got = torchc.compile(f)(x, l2)
    assert_same(got, want)
    assert len(l1) == len(l2) == 1
    assert_same(l2[0], l1[0])


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_list_shared_across_a_break_stays_one_object():
    @torchc.disable
    def opaque(l, x):
        l.append(x)
        return x

    def f(x):
        l = [x]
        y = opaque(l, x * 2)
        l.append(y + 1)
        return len(l), l

    want = f(torch.ones(2))
    got = torchc.compile(f)(torch.ones(2))
    assert_same(got, want)


# ---- sets ------------------------------------------------------------------------------

NAMES = {"a", "b"}


FIELDS = ("logits", "hidden")


def test_sets_and_set_comprehensions():
    def f(x, allowed):
        names = {n for n in FIELDS}
        s = set()
        t = set(["q", "r"]) | frozenset({"r", "z"})
        u = {*names, "extra"}
        y = x * 2 if "logits" in names else x
        y = y + 1 if "a" in allowed and "z" not in allowed else y
        y = y + len(u) + len(t) + (3 if "b" in NAMES else 0)
        return y, names, s, u, frozenset(allowed)

    ex = whole(f, torch.randn(3), {"a", "c"})
    cf = torchc.compile(f)
    got = cf(torch.ones(3), {"a", "c"})
    assert type(got[1]) is set and type(got[2]) is set and type(got[4]) is frozenset
    got2 = cf(torch.ones(3), {"a", "c"})
    assert got2[1] is not got[1]                      # a fresh set each call
    assert_same(cf(torch.ones(3), {"z"}), f(torch.ones(3), {"z"}))   # guarded on the value


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_set_mutation_is_left_to_eager():
    def f(x, seen):
        seen.add("k")
        return x + len(seen)

    s1, s2 = set(), set()
    assert_same(torchc.compile(f)(torch.ones(2), s2), f(torch.ones(2), s1))
    assert s1 == s2 == {"k"}


def test_id_of_an_object_is_identity_guarded():
    class Holder:
        pass

    table = {}

    def f(x, h):
        return x * 2 if id(h) in table else x + 1

    h1, h2 = Holder(), Holder()
    table[id(h1)] = 1
    whole(f, torch.ones(2), h1)
    cf = torchc.compile(f)
    assert_same(cf(torch.ones(2), h1), torch.ones(2) * 2)
    assert_same(cf(torch.ones(2), h2), torch.ones(2) + 1)


def test_dict_with_int_keys_passed_in():
    def f(x, d):
        return x * d[0] + d[1] + d.get(7, 0.5), 3 in d

    d = {0: 2.0, 1: 3.0, 3: 1.0}
    whole(f, torch.randn(3), d)
    cf = torchc.compile(f)
    d2 = {0: 5.0, 1: 3.0, 7: 1.0}       # same length, another key: guarded
    assert_same(cf(torch.ones(3), d2), f(torch.ones(3), d2))


def test_tiny_llama_one_graph():
    T = __import__("pytest").importorskip("transformers")
    cfg = T.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                        num_key_value_heads=2, vocab_size=100, max_position_embeddings=64)
    m = T.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 100, (1, 8))
    with torch.no_grad():
        want = m(ids).logits
        ex = torchc.explain(m)(ids)
    assert_same(ex.result.logits, want, rtol=1e-4, atol=1e-4)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex


def test_finfo_iinfo_are_constants():
    def f(x):
        m = torch.finfo(x.dtype).min
        big = torch.iinfo(torch.int32).max
        return torch.where(x > 0, x, torch.tensor(m, dtype=x.dtype)), big, torch.finfo(torch.float16).eps

    whole(f, torch.randn(5))


def test_tensor_of_a_number_is_0d():
    def f(x):
        a = torch.tensor(torch.finfo(x.dtype).min, dtype=x.dtype)
        b, c, d = torch.tensor(3), torch.tensor(True), torch.tensor(2.5)
        return torch.where(x > 0, x, a), a, b, c, d, b * x

    whole(f, torch.randn(5))


class _CallMe:
    def __call__(self, x):
        return x + 1


class _NoCall:
    pass


def test_callable_builtin_compiles():
    """callable(x) on every kind of traced value answers as eager, in one graph."""
    lin = torch.nn.Linear(3, 3)
    cm, nc = _CallMe(), _NoCall()

    def f(x, fns):
        flags = [callable(x), callable(fns), callable(len), callable(torch.relu), callable(lin),
                 callable(cm), callable(nc), callable(3), callable(None), callable(_CallMe),
                 callable(x.shape), callable({"a": 1}), callable(lambda: 1), callable(x.sum)]
        if all(callable(g) for g in fns):
            x = x * 2
        return x + sum(flags)

    x = torch.randn(2, 3)
    fns = (torch.sin, lin)
    exp = f(x, fns)
    torchc.reset()
    ex = torchc.explain(f)(x, fns)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    torch.testing.assert_close(torchc.compile(f)(x, fns), exp)
