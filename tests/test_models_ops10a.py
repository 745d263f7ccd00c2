"""copy.deepcopy of a plain object the trace changed before the copy (dynamo_hook/obj_new.c):
a config copied, one attribute set on the copy, then the copy copied again (a cache built from
a copy of the config). The second copy is made by the guards from the unchanged first copy
with the trace's writes replayed on it (copy_then_write), so the frame stays one graph; writes
inside the object, or of a value that is not an immutable constant, still break (correct).
Each test compares values, dtype and shape with eager, on edge shapes (0, 1, odd,
non-contiguous), and the copies' attributes and __dict__ order."""
import copy

import pytest
import torch

import torchc


class Cfg:
    def __init__(self):
        self.layers = 3
        self.decoder_layers = 2
        self.scale = 0.5
        self.name = "cfg"
        self.inner = {"k": 1}


class MappedCfg(Cfg):
    """a __setattr__ written in Python mapping one attribute name onto another"""
    attribute_map = {"num_layers": "layers"}

    def __setattr__(self, key, value):
        key = self.attribute_map.get(key, key)
        super().__setattr__(key, value)

    def __getattr__(self, key):
        if key == "num_layers":
            return self.layers
        raise AttributeError(key)


def _whole(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count > 0, ex.break_reasons
    return ex.result


def _same(got, want):
    torch.testing.assert_close(got, want, equal_nan=True)
    assert got.dtype == want.dtype and got.shape == want.shape


SHAPES = [(0,), (1,), (7,), (3, 5), (2, 0, 4)]


@pytest.mark.parametrize("shape", SHAPES)
def test_copy_of_changed_copy(shape):
    cfg = Cfg()

    def f(x):
        c1 = copy.deepcopy(cfg)
        c1.layers = cfg.decoder_layers
        c1.extra = 7  # a new attribute: last in __dict__
        c2 = copy.deepcopy(c1)
        return x * c2.layers + c2.extra * c2.scale, c2

    x = torch.randn(shape)
    want, wc = f(x)
    got, gc = _whole(f, x)
    _same(got, want)
    assert vars(gc) == vars(wc) and list(vars(gc)) == list(vars(wc))
    assert gc is not cfg and cfg.layers == 3 and not hasattr(cfg, "extra")
    assert gc.inner is not cfg.inner


def test_copy_of_changed_copy_follows_the_source_between_calls():
    cfg = Cfg()

    def f(x):
        c1 = copy.deepcopy(cfg)
        c1.layers = cfg.decoder_layers + 1
        c2 = copy.deepcopy(c1)
        return x * c2.layers - c2.scale

    x = torch.randn(6, 4).t()  # non-contiguous
    _same(_whole(f, x), f(x))
    g = torchc.compile(f)
    _same(g(x), f(x))
    cfg.decoder_layers, cfg.scale = 5, 2.0
    _same(g(x), f(x))
    st = torchc._C.stats()
    assert st["compiles"] >= 2 and st["fallbacks"] == 0, st  # the change recompiles


@pytest.mark.parametrize("shape", [(1,), (5, 3)])
def test_copy_of_copy_changed_through_python_setattr(shape):
    cfg = MappedCfg()

    def f(x):
        c1 = copy.deepcopy(cfg)
        c1.num_layers = c1.decoder_layers  # stored as layers by the class's __setattr__
        c2 = copy.deepcopy(c1)
        return x + c2.num_layers * 10 + c2.layers, c2

    x = torch.randn(shape)
    want, wc = f(x)
    got, gc = _whole(f, x)
    _same(got, want)
    assert vars(gc) == vars(wc) and "num_layers" not in vars(gc)


def test_copy_of_copy_with_an_attribute_deleted_and_set_again():
    cfg = Cfg()

    def f(x):
        c1 = copy.deepcopy(cfg)
        del c1.scale
        c1.name = None
        c1.scale = 3.0  # set again after its deletion: last in __dict__
        c2 = copy.deepcopy(c1)
        return x * c2.scale, c2

    x = torch.randn(3, 5)
    want, wc = f(x)
    got, gc = _whole(f, x)
    _same(got, want)
    assert list(vars(gc)) == list(vars(wc)) and vars(gc) == vars(wc)


@pytest.mark.allow_fallback  # a write inside the copied object: the copy breaks (correct)
def test_copy_of_copy_changed_inside_breaks_and_matches():
    cfg = Cfg()

    def f(x):
        c1 = copy.deepcopy(cfg)
        c1.inner["k"] = 4
        c2 = copy.deepcopy(c1)
        return x * c2.inner["k"], c2

    x = torch.randn(4)
    want, wc = f(x)
    torchc.reset()
    ex = torchc.explain(f)(x)
    got, gc = ex.result
    _same(got, want)
    assert vars(gc) == vars(wc) and cfg.inner == {"k": 1}


@pytest.mark.allow_fallback  # a mutable value written: its copy is a new object in eager
def test_copy_of_copy_with_a_list_written_breaks_and_matches():
    cfg = Cfg()

    def f(x):
        c1 = copy.deepcopy(cfg)
        c1.sizes = [1, 2]
        c2 = copy.deepcopy(c1)
        c2.sizes.append(3)
        return x * len(c1.sizes) + len(c2.sizes), c1, c2

    x = torch.randn(4)
    want, w1, w2 = f(x)
    torchc.reset()
    got, g1, g2 = torchc.explain(f)(x).result
    _same(got, want)
    assert g1.sizes == w1.sizes == [1, 2] and g2.sizes == w2.sizes == [1, 2, 3]
