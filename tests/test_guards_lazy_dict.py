"""A dict the trace reaches is guarded on what the trace reads of it (issue 22): its key set
always, a constant value only once the trace reads it (dynamo_hook/variables.c, lazy guards;
symbolic.c says which instructions read what they consume). A value nobody reads may change
without a recompile (an optimizer's learning rate, read only by its step); a value read, a key
added or removed, iteration over items or values, a write-back of the dict: eager's answer on
every call. Each test differential against eager, with the compile count where it matters."""
import torch

import torchc


def _compiles():
    return torchc._C.stats()["compiles"]


def _check(f, fe, *args):
    got, want = f(*args), fe(*args)
    torch.testing.assert_close(got, want)


def test_unread_value_changes_without_recompile():
    d = {"scale": 2.0, "lr": 0.1, "name": "a"}

    def fn(x, d):
        return x * d["scale"]

    f = torchc.compile(fn)
    x = torch.randn(5)
    _check(f, fn, x, d)
    c0 = _compiles()
    for lr in (0.2, 0.3, 0.05, 1e-4, 7.0, 0.1, 0.9, 0.01, 3.0, 4.0):
        d["lr"] = lr
        d["name"] = "b%s" % lr
        _check(f, fn, x, d)
    assert _compiles() == c0


def test_read_value_change_gives_eager_answer():
    d = {"scale": 2.0, "lr": 0.1}

    def fn(x, d):
        return x * d["scale"]

    f = torchc.compile(fn)
    x = torch.randn(5)
    _check(f, fn, x, d)
    c0 = _compiles()
    d["scale"] = 3.0
    _check(f, fn, x, d)
    assert _compiles() == c0 + 1
    d["scale"] = 2.0
    _check(f, fn, x, d)


def test_value_read_by_closure_and_object_attribute():
    class Opt:
        pass

    o = Opt()
    o.groups = [{"w": 2.0, "lr": 0.1, "params": [torch.ones(3)]}, {"w": 3.0, "lr": 0.2, "params": []}]

    def fn(x):
        for g in o.groups:
            for p in g["params"]:
                x = x + p
            x = x * g["w"]
        return x

    f = torchc.compile(fn)
    x = torch.randn(3)
    _check(f, fn, x)
    c0 = _compiles()
    for lr in (0.5, 0.6, 0.7):
        o.groups[0]["lr"] = lr
        o.groups[1]["lr"] = lr / 2
        _check(f, fn, x)
    assert _compiles() == c0
    o.groups[1]["w"] = 5.0
    _check(f, fn, x)


def test_value_read_in_a_condition_an_index_a_return():
    d = {"flag": True, "i": 0, "k": 1.5, "other": 1}

    def fn(x, d):
        y = [x, x * 2, x * 3][d["i"]]
        if d["flag"]:
            y = y + 1
        return y, d["k"]

    f = torchc.compile(fn)
    x = torch.randn(4)
    _check(f, fn, x, d)
    for key, val in (("flag", False), ("i", 2), ("k", -1.0), ("i", 1), ("flag", True), ("other", 5)):
        d[key] = val
        _check(f, fn, x, d)


def test_key_added_removed_or_renamed():
    d = {"a": 1.0, "b": 2.0}

    def fn(x, d):
        y = x * d["a"]
        if "c" in d:
            y = y + 1
        return y + d.get("b2", 0.0)

    f = torchc.compile(fn)
    x = torch.randn(3)
    _check(f, fn, x, d)
    d["c"] = 0.0
    _check(f, fn, x, d)
    del d["c"]
    _check(f, fn, x, d)
    del d["b"]
    d["b2"] = 4.0  # same length, another key
    _check(f, fn, x, d)
    d["b"] = 2.0
    _check(f, fn, x, d)


def test_key_iteration_sees_renamed_keys():
    d = {"a": 1.0, "b": 2.0}

    def fn(x, d):
        for k in d:  # the keys, not the values
            if k.startswith("b"):
                x = x + 1
        return x

    f = torchc.compile(fn)
    x = torch.randn(3)
    _check(f, fn, x, d)
    c0 = _compiles()
    d["b"] = 3.0  # a value not read
    _check(f, fn, x, d)
    assert _compiles() == c0
    del d["b"]
    d["c"] = 2.0
    _check(f, fn, x, d)


def _iterations():
    def items(x, d):
        for k, v in d.items():
            x = x + v
        return x

    def values(x, d):
        for v in d.values():
            x = x * v
        return x

    def keys_then_subscript(x, d):
        for k in d:
            x = x - d[k]
        return x

    def sum_values(x, d):
        return x + sum(d.values())

    def star_star(x, d):
        def g(x, a, b, c):
            return x * a + b - c
        return g(x, **d)

    def copy_then_read(x, d):
        e = dict(d)
        return x * e["c"]

    return [items, values, keys_then_subscript, sum_values, star_star, copy_then_read]


def test_iteration_over_items_values_keys_guards_all_of_it():
    for fn in _iterations():
        d = {"a": 1.0, "b": 2.0, "c": 3.0}
        f = torchc.compile(fn)
        x = torch.randn(3)
        _check(f, fn, x, d)
        for k, v in (("a", 5.0), ("b", -1.0), ("c", 0.5)):
            d[k] = v
            _check(f, fn, x, d)


def test_nested_dicts_lists_tuples():
    d = {"a": {"b": 1.0, "c": 2.0}, "l": [1.0, 2.0], "t": (0.9, 0.99), "u": 3.0}

    def fn(x, d):
        b1, b2 = d["t"]
        return x * d["a"]["b"] + d["l"][1] + b1 - b2

    f = torchc.compile(fn)
    x = torch.randn(3)
    _check(f, fn, x, d)
    c0 = _compiles()
    d["a"]["c"] = 7.0  # not read
    d["u"] = 4.0  # not read
    _check(f, fn, x, d)
    assert _compiles() == c0
    for change in (lambda: d["a"].__setitem__("b", 3.0), lambda: d["l"].__setitem__(1, -2.0),
                   lambda: d.__setitem__("t", (0.5, 0.25)), lambda: d.__setitem__("a", {"b": 9.0, "c": 2.0}),
                   lambda: d["l"].append(5.0)):
        change()
        _check(f, fn, x, d)


def test_write_back_keeps_values_changed_outside():
    d = {"n": 0, "lr": 0.1}

    def fn(x, d):
        d["n"] = d["n"] + 1
        return x * 2

    f = torchc.compile(fn)
    de = dict(d)
    x = torch.randn(3)
    for lr in (0.1, 0.5, 0.25):
        d["lr"] = de["lr"] = lr
        torch.testing.assert_close(f(x, d), fn(x, de))
        assert d == de, (d, de)


def test_dict_returned_whole():
    d = {"lr": 0.1, "w": 2.0}

    def fn(x, d):
        return x * d["w"], d

    f = torchc.compile(fn)
    x = torch.randn(3)
    for lr in (0.1, 0.2, 0.3):
        d["lr"] = lr
        y, r = f(x, d)
        torch.testing.assert_close(y, x * 2.0)
        assert r == d


CFG = {"scale": 2.0, "lr": 0.1}


def _global_fn(x):
    return x * CFG["scale"]


def test_global_dict():
    f = torchc.compile(_global_fn)
    x = torch.randn(3)
    _check(f, _global_fn, x)
    c0 = _compiles()
    CFG["lr"] = 0.7
    _check(f, _global_fn, x)
    assert _compiles() == c0
    CFG["scale"] = -1.0
    _check(f, _global_fn, x)


def test_value_live_across_a_graph_break():
    import torch._dynamo
    d = {"a": 2.0, "b": 3.0}

    def fn(x, d):
        a = d["a"]
        y = x + 1
        torch._dynamo.graph_break()
        return y * a

    f = torchc.compile(fn)
    x = torch.randn(3)
    for v in (2.0, 5.0, -1.0):
        d["a"] = v
        _check(f, fn, x, d)
