"""Standard-library containers and data objects in the compiled frame (dynamo_hook/obj_data.c):
collections.OrderedDict / defaultdict / deque made in the frame, iter()/next(), sorted() and
list.sort() with key= and reverse=, dict methods (pop, update(**kw), popitem, clear),
dataclasses (fields, replace, __post_init__) and torch.return_types results of ops left to
eager. Each test compares with eager — outputs, their types, and the state of what the caller
can see afterwards — and asserts the graph/break counts from torchc.explain, so a silent
fallback fails it."""
import collections
import dataclasses

import pytest
import torch

import torchc


def same(got, want):
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, torch.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5)
    elif isinstance(want, dict):
        assert list(got.keys()) == list(want.keys())
        for k in want:
            same(got[k], want[k])
        if isinstance(want, collections.defaultdict):
            assert got.default_factory is want.default_factory
    elif dataclasses.is_dataclass(want) and not isinstance(want, dict):
        same(vars(got), vars(want))
    elif isinstance(want, (tuple, list, collections.deque)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    else:
        assert got == want


def whole(fn, *args, graphs=1):
    """fn compiled whole (graphs graphs, no break); returns (compiled result, eager result)"""
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex.break_reasons
    same(ex.result, want)
    return ex.result, want


x4 = torch.randn(4, 5)


# ---- OrderedDict ------------------------------------------------------------------------------

def test_ordered_dict_made_and_returned():
    def f(x):
        d = collections.OrderedDict()
        d["b"] = x * 2
        d["a"] = x + 1
        d["c"] = x - 1
        d.move_to_end("b")
        k, v = d.popitem(last=False)
        return sum(d.values()) + v, d, k

    got, want = whole(f, x4)
    assert list(got[1]) == ["c", "b"] and got[2] == "a"


def test_ordered_dict_from_pairs_and_kwargs():
    def f(x):
        d = collections.OrderedDict([("p", x), ("q", x * 3)], r=x + 2)
        d.move_to_end("p", last=False)
        d.update(s=x * 4)
        e = dict(d)
        return d, e, len(d)

    got, want = whole(f, x4)
    assert type(got[1]) is dict


# ---- defaultdict ------------------------------------------------------------------------------

def test_defaultdict_list_append():
    def f(x):
        d = collections.defaultdict(list)
        d["a"].append(x)
        d["a"].append(x + 1)
        d["b"].append(x * 2)
        return torch.stack(d["a"]) + d["b"][0], d

    got, want = whole(f, x4)
    assert got[1].default_factory is list


def test_defaultdict_int_counter():
    def f(x, names):
        c = collections.defaultdict(int)
        for n in names:
            c[n] += 1
        return x * c["a"] + c["b"], c

    whole(f, x4, ("a", "b", "a", "c", "a"))


# ---- deque ---------------------------------------------------------------------------------------

def test_deque_methods():
    def f(x):
        q = collections.deque([x])
        q.append(x * 2)
        q.appendleft(x * 3)
        q.extend([x + 1, x + 2])
        q.rotate(2)
        a = q.popleft()
        b = q.pop()
        return a + b, q, len(q)

    whole(f, x4)


# ---- iter / next -------------------------------------------------------------------------------

def test_iter_next():
    def f(x):
        it = iter([x, x * 2, x * 3])
        a = next(it)
        b = next(it)
        rest = [y + 1 for y in it]
        c = next(it, None)
        return a + b, rest, c is None

    whole(f, x4)


def test_loop_then_next_on_the_same_iterator():
    def f(x):
        it = iter([x, x * 2, x * 3, x * 4])
        for y in it:
            if y is not None:
                break
        return y, next(it), list(it)

    whole(f, x4)


def test_zip_iterator_shared_by_loop_and_next():
    def f(x):
        it = zip([x, x + 1, x + 2], [1, 2, 3])
        for a, k in it:
            break
        b, j = next(it)
        return a * k + b * j

    whole(f, x4)


# ---- sorting -------------------------------------------------------------------------------------

def test_list_sort_with_key_and_reverse():
    def f(x):
        l = [(3, x), (1, x * 2), (2, x * 3), (1, x * 4)]
        l.sort(key=lambda p: p[0])
        m = sorted(l, key=lambda p: p[0], reverse=True)  # stable under reverse
        l.reverse()
        return [p[1] for p in l], [p[1] for p in m]

    whole(f, x4)


def test_sort_of_a_list_passed_in_is_seen_by_the_caller():
    def f(x, l):
        l.sort(key=lambda t: t.shape[0])
        return l[0] + 1

    args = lambda: (x4, [torch.randn(3), torch.randn(1), torch.randn(2)])
    a1, a2 = args(), args()
    a2 = (a2[0], list(a1[1]))
    want = f(*a1)
    torchc.reset()
    ex = torchc.explain(f)(*a2)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    same(ex.result, want)
    assert [t.shape[0] for t in a2[1]] == [1, 2, 3]
    assert all(g is w for g, w in zip(a2[1], a1[1]))


def test_dict_pop_then_sorted_items():
    def f(x):
        d = {"a": x}
        d.update(b=x * 2)
        d.setdefault("c", x * 3)
        p = d.pop("a")
        return p + sum(v for k, v in sorted(d.items())), sorted(d, reverse=True)

    whole(f, x4)


def test_dict_clear_and_popitem_passed_in():
    def f(x, d):
        k, v = d.popitem()
        d.clear()
        d["z"] = v * 2
        return x + v, k

    d1, d2 = {"a": torch.randn(4, 5), "b": torch.randn(4, 5)}, None
    d2 = dict(d1)
    want = f(x4, d1)
    torchc.reset()
    ex = torchc.explain(f)(x4, d2)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    same(ex.result, want)
    same(d2, d1)


# ---- dataclasses ---------------------------------------------------------------------------------

@dataclasses.dataclass
class Out:
    a: torch.Tensor
    b: torch.Tensor = None
    scale: float = 1.0

    def __post_init__(self):
        if self.b is None:
            self.b = self.a + 1


def test_dataclass_fields_replace_post_init():
    def f(x):
        o = Out(x)
        o2 = dataclasses.replace(o, a=x * 2)
        names = [fl.name for fl in dataclasses.fields(o)]
        return o2.a + o.b * o2.scale + len(dataclasses.fields(o)), names, o2

    got, want = whole(f, x4)
    assert got[1] == ["a", "b", "scale"]
    same(got[2].a, want[2].a)
    same(got[2].b, want[2].b)


def test_dataclass_passed_in_fields_loop():
    def f(o):
        total = 0
        for fl in dataclasses.fields(o):
            v = getattr(o, fl.name)
            if isinstance(v, torch.Tensor):
                total = total + v.sum()
        return total

    o = Out(torch.randn(3), torch.randn(3), 2.0)
    whole(f, o)


# ---- torch.return_types of ops left to eager ---------------------------------------------------

@pytest.mark.parametrize("op", ["qr", "eigh", "slogdet", "svd"])
def test_return_types_resume_cleanly(op):
    def f(y):
        y = y * 2.0
        if op == "qr":
            q, r = torch.linalg.qr(y)
            return q @ r
        if op == "eigh":
            w, v = torch.linalg.eigh(y)
            return (v * w) @ v.mT
        if op == "slogdet":
            r = torch.linalg.slogdet(y)
            return r.sign * r.logabsdet.exp() + y.sum()
        u, s, vh = torch.linalg.svd(y)
        return (u * s) @ vh

    x = torch.randn(4, 4, dtype=torch.float64)
    y = x @ x.mT + 4 * torch.eye(4, dtype=torch.float64)
    want = f(y)
    torchc.reset()
    ex = torchc.explain(f)(y)
    torch.testing.assert_close(ex.result, want)
    reasons = " ".join(str(r) for r in ex.break_reasons)
    assert "unsupported Python value" not in reasons and "attribute" not in reasons, reasons
    # the op left to eager is the only break: the code after it is a graph too
    assert ex.graph_break_count <= 1 and ex.graph_count == 1 + ex.graph_break_count, reasons


# ---- dict-subclass instances passed in (their storage; C methods, super() calls) ----------------

class Rec(collections.OrderedDict):
    def __setitem__(self, k, v):
        super().__setitem__(k, v)
        super().__setattr__(k, v)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclasses.dataclass
class RecOut(Rec):
    loss: torch.Tensor = None
    logits: torch.Tensor = None

    def __post_init__(self):
        for fl in dataclasses.fields(self):
            v = getattr(self, fl.name)
            if v is not None:
                self[fl.name] = v


def _rec_state(r):
    return list(r.items()), {k: v for k, v in vars(r).items()}


def test_dict_subclass_storage_written_and_read():
    def f(x, r):
        r["a"] = x + 1
        r["b"] = x * 2
        total = sum(v for v in r.values())
        return total + len(r), list(r.keys()), "a" in r, r.to_tuple()

    def fresh():
        r = Rec()
        collections.OrderedDict.__setitem__(r, "z", torch.ones(4, 5))  # storage only
        return r

    r1, r2 = fresh(), fresh()
    r2["z"] = r1["z"]
    want = f(x4, r1)
    torchc.reset()
    ex = torchc.explain(f)(x4, r2)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    same(ex.result[0], want[0])
    assert ex.result[1] == want[1] and ex.result[2] == want[2]
    assert list(r2.keys()) == list(r1.keys()) == ["z", "a", "b"]
    for k in r1:
        same(r2[k], r1[k])
    same(r2.a, r1.a)
    same(r2.b, r1.b)


def test_record_post_init_on_the_callers_object():
    # what a model's output record does when eager builds it and its __init__ runs as a frame
    def f(o, x):
        o.loss = x.sum()
        o.logits = x * 2
        o.__post_init__()
        return o.logits + 1

    o1, o2 = RecOut.__new__(RecOut), RecOut.__new__(RecOut)
    want = f(o1, x4)
    torchc.reset()
    ex = torchc.explain(f)(o2, x4)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    same(ex.result, want)
    assert list(o2.keys()) == list(o1.keys()) == ["loss", "logits"]
    same(o2["logits"], o1["logits"])
    same(o2.loss, o1.loss)


def test_dict_iterator_passed_to_a_resume_function():
    def f(x, d):
        out = x
        for k, v in d.items():
            out = out + v
            print_fn(k)  # a call left to eager: the loop resumes with the dict iterator
        return out

    d = {"a": torch.randn(4, 5), "b": torch.randn(4, 5), "c": torch.randn(4, 5)}
    want = f(x4, d)
    torchc.reset()
    ex = torchc.explain(f)(x4, d)
    same(ex.result, want)
    reasons = " ".join(str(r) for r in ex.break_reasons)
    assert "dict_itemiterator" not in reasons, reasons
    assert ex.graph_break_count == 2, reasons


@torchc.disable
def print_fn(k):
    return None
