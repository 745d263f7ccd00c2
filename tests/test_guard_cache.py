"""Guards resolve module attributes through a per-source cache keyed by dict version tags
(dynamo_hook/guards.c module_getattr_cached): every way of changing what `self.x` means must
still be seen. Compiled results are compared with eager after each change."""
import pytest
import torch
import torch.nn as nn

import torchc


class Inner(nn.Module):
    def __init__(self, s=1.0):
        super().__init__()
        self.w = nn.Parameter(torch.full((4,), s))
        self.register_buffer("b", torch.full((4,), 2 * s))

    def forward(self, x):
        return x * self.w + self.b


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.scale = 3.0

    def forward(self, x):
        return self.inner(x) * self.scale


def _check(c, m, x):
    with torch.no_grad():
        torch.testing.assert_close(c(x), m(x))


def test_attribute_changes_are_seen():
    torchc.reset()
    m = Outer()
    c = torchc.compile(m)
    x = torch.randn(3, 4)
    for _ in range(3):
        _check(c, m, x)
    m.inner = Inner(5.0)  # _modules entry replaced
    _check(c, m, x)
    m.inner.w = nn.Parameter(torch.full((4,), -1.0))  # _parameters entry replaced
    _check(c, m, x)
    m.inner.b = torch.full((4,), 7.0)  # buffer replaced
    _check(c, m, x)
    m.scale = 0.5  # instance dict constant
    _check(c, m, x)
    del m.inner._parameters["w"]  # moved from _parameters ...
    m.inner.__dict__["w"] = torch.full((4,), 9.0)  # ... to the instance dict
    _check(c, m, x)
    m.inner.__dict__.pop("w")
    m.inner._buffers["w"] = torch.full((4,), 11.0)  # now a buffer
    _check(c, m, x)
    old = m.inner
    m._modules["inner"] = Inner(2.0)
    _check(c, m, x)
    m._modules["inner"] = old  # back to an object seen before
    _check(c, m, x)


def test_many_instances_share_code():
    """one compiled forward, different module objects: each resolves its own attributes"""
    torchc.reset()
    ms = [Inner(float(i)) for i in range(4)]
    x = torch.randn(2, 4)
    cs = [torchc.compile(m) for m in ms]
    for _ in range(2):
        for m, c in zip(ms, cs):
            _check(c, m, x)


def test_cached_values_follow_their_dicts():
    """the value itself is reused while the dicts that hold it (and those before it) keep their
    version tags: a change to any of them, in any order, is seen; changes elsewhere (another
    module's dicts, the tensor's data in place) keep the cached value and the right answer"""
    torchc.reset()
    m = Outer()
    other = Outer()
    c = torchc.compile(m)
    x = torch.randn(3, 4)
    for _ in range(3):
        _check(c, m, x)
    other.scale = 9.0  # another module: m's dicts unchanged
    other.inner.w = nn.Parameter(torch.zeros(4))
    _check(c, m, x)
    with torch.no_grad():
        m.inner.w.mul_(3)  # same tensor object, new data: no dict changes needed
    _check(c, m, x)
    m.inner._parameters["w"] = nn.Parameter(torch.full((4,), 4.0))  # the sub-dict that holds it
    _check(c, m, x)
    m.inner._buffers["other"] = torch.zeros(1)  # a later sub-dict: the cached w is still right
    _check(c, m, x)
    m.inner._buffers["b"] = torch.full((4,), -3.0)
    _check(c, m, x)
    m.__dict__["scale"] = 1.5  # the instance dict of the outer module
    _check(c, m, x)
    m.inner.__dict__["b"] = torch.full((4,), 6.0)  # now shadowed by the instance dict
    _check(c, m, x)
    for _ in range(2):
        _check(c, m, x)


class Config:
    """a class with its own __getattribute__ (like transformers' configs): guards run the real
    getattr; one object read by many layers is asked once per check"""

    def __init__(self, k):
        self.k = k
        self.alias = {"kk": "k"}

    def __getattribute__(self, key):
        if key != "alias" and key in object.__getattribute__(self, "alias"):
            key = object.__getattribute__(self, "alias")[key]
        return object.__getattribute__(self, key)


class CfgLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg

    def forward(self, x):
        return x * self.cfg.kk + self.cfg.k


@pytest.mark.allow_fallback
def test_full_getattr_once_per_object_and_name():
    torchc.reset()
    shared, own = Config(2.0), Config(5.0)
    m = nn.Sequential(*[CfgLayer(shared) for _ in range(5)], CfgLayer(own), CfgLayer(shared))
    c = torchc.compile(m)
    x = torch.randn(3, 4)
    for _ in range(2):
        _check(c, m, x)
    shared.k = -1.0  # the shared object's value: every layer that reads it
    _check(c, m, x)
    own.k = 7.0  # the other object of the same class: not taken from the shared one
    _check(c, m, x)
    m[2].cfg = Config(-1.0)  # an equal value in a third object
    _check(c, m, x)
    m[3].cfg = Config(0.25)
    _check(c, m, x)
    shared.alias = {}  # kk no longer an alias: eager raises, and so must the compiled call
    try:
        m(x)
        raised = False
    except AttributeError:
        raised = True
    assert raised
    try:
        c(x)
        assert False, "compiled call did not raise"
    except AttributeError:
        pass
