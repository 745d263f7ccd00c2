"""Object model, round 9 (issue 21 items 1-3): shared module entries and library-style code.

Shared module entries: a method of an nn.Module that runs as a frame of its own below the
compiled call's first frame (its caller broke at the call; a resume function) type-guards its
modules from its first trace (eval_frame.c), so the second of N identical blocks reuses the
first one's entry; the pinned module is found where the entry read it (self, args[0] of a
*args wrapper such as transformers' deprecate_kwarg, a loop's iterator: guards.c
dh_module_sharing_check).
Object model: a Python metaclass's property read on a class (EnumType.__members__) inlined
with the class as self; types.MappingProxyType(d) as a live read-only view of d; a class's
_private constants; torch.Size's numel/count/index; Counter's in-place ops and operators.
"""
import collections
import enum
import functools
import itertools
import io
import re
import types
import weakref

import pytest
import torch
import torch.nn as nn

import torchc
from conftest import captured_whole


def _same(a, b):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
        torch.testing.assert_close(a, b)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert type(a) is type(b) and a == b, (a, b)


def _whole(fn, *args):
    """one graph, no break, eager's value on the first and a cached call"""
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert captured_whole(ex) and not ex.break_reasons, ex.break_reasons
    cf = torchc.compile(fn)
    _same(cf(*args), want)
    _same(cf(*args), want)
    return ex


X = torch.randn(4, 6, generator=torch.Generator().manual_seed(9))

# ---- shared module entries -------------------------------------------------------------------

_SINK = io.StringIO()


def _deprecate(func):
    """a decorator in the style of transformers' deprecate_kwarg: self is args[0]"""
    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        name = f"{args[0].__class__.__name__}.{func.__name__}"
        kwargs.pop("old_mask", None)
        return func(*args, **kwargs) if name else None
    return wrapped


class _Block(nn.Module):
    def __init__(self, scale=0.5):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.ln = nn.LayerNorm(8)
        self.scale = scale

    @_deprecate
    def forward(self, x, mask=None):
        h = self.lin(self.ln(x)).relu()
        print("x", file=_SINK)  # a graph break: each block's forward runs as its own frame
        return x + h * self.scale


class _Stack(nn.Module):
    def __init__(self, n, scales=None):
        super().__init__()
        self.blocks = nn.ModuleList(_Block(scales[i] if scales else 0.5) for i in range(n))

    def forward(self, x):
        for b in self.blocks:
            x = b(x, mask=None, old_mask=None)
        return x


def _per_code(ex, fn):
    code = fn.__code__
    return sum(n for k, n in ex.compiles_per_code.items() if f"{code.co_filename}:{code.co_firstlineno})" in k)


@pytest.mark.parametrize("n", [2, 6])
def test_identical_blocks_compile_once_per_code(n):
    """the second block reuses the first one's entries: the block's forward and its resume
    compile once each, the *args wrapper (and its resume) once each, whatever N"""
    torch.manual_seed(0)
    m = _Stack(n)
    x = torch.randn(2, 8)
    with torch.no_grad():
        ex = torchc.explain(m)(x)
        torch.testing.assert_close(ex.result, m(x))
        ex2 = torchc.explain(m)(x)
    fwd = _per_code(ex, _Block.forward.__wrapped__)
    wrap = _per_code(ex, _Block.forward)
    assert 1 <= fwd <= 2 and 1 <= wrap <= 2, ex.compiles_per_code
    assert max(ex.compiles_per_code.values()) <= 3, ex.compiles_per_code  # the stack's loop: + its last turn
    assert sum(ex2.compiles_per_code.values()) == 0 and ex2.cache_hits == ex2.pieces_run


def test_shared_entry_reads_each_instance():
    """an entry shared from the first block reads each block's own parameters and attributes"""
    torch.manual_seed(0)
    m = _Stack(4, scales=[0.5, 0.5, 2.0, 0.5])
    with torch.no_grad():
        for i, b in enumerate(m.blocks):
            b.lin.weight.mul_(1 + i / 10)
        x = torch.randn(3, 8)
        cm = torchc.compile(m)
        torch.testing.assert_close(cm(x), m(x))
        m.blocks[1].scale = 3.0
        m.blocks[3].ln.weight.fill_(2.0)
        torch.testing.assert_close(cm(x), m(x))


def test_shared_entry_sees_per_instance_hooks():
    """hooks registered on one block (or its child) only: the shared entries still run them
    where eager does, and not elsewhere"""
    torch.manual_seed(0)
    m = _Stack(3)
    m.blocks[1].lin.register_forward_hook(lambda mod, i, o: o * 10)
    m.blocks[2].register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] * 0.5,), kwargs), with_kwargs=True)
    x = torch.randn(2, 8)
    with torch.no_grad():
        cm = torchc.compile(m)
        for _ in range(2):
            torch.testing.assert_close(cm(x), m(x))
        m.blocks[0].lin.weight.zero_()
        torch.testing.assert_close(cm(x), m(x))


# ---- enum --------------------------------------------------------------------------------------

class Color(enum.Enum):
    RED = 1
    GREEN = 2
    BLUE = 3


class Act(str, enum.Enum):
    RELU = "relu"
    TANH = "tanh"


def test_enum_members_items():
    def f(x):
        s = x
        for name, mem in Color.__members__.items():
            s = s + mem.value * len(name)
        return s
    _whole(f, X)


def test_enum_members_len_contains_values():
    def f(x):
        names = [m.name for m in Color.__members__.values()]
        k = len(Color.__members__) + ("GREEN" in Color.__members__) + names.index("BLUE")
        return x * k + Color.__members__["RED"].value
    _whole(f, X)


def test_str_enum_members_pick_a_function():
    def f(x):
        acts = {a.value: a for a in Act}
        out = x
        for name in Act.__members__:
            out = out + len(name)
        return getattr(torch, acts["tanh"].value)(out)
    _whole(f, X)


class _Meta(type):
    @property
    def width(cls):
        return cls._w * 2


class _K(metaclass=_Meta):
    _w = 3


def test_metaclass_property_and_private_class_constant():
    def f(x):
        return x * _K.width
    _whole(f, X)
    cf = torchc.compile(f)
    try:
        _K._w = 5  # the constant is guarded: the next call sees it
        _same(cf(X), f(X))
    finally:
        _K._w = 3


# ---- types.MappingProxyType --------------------------------------------------------------------

def test_mappingproxy_is_live_and_read_only():
    def f(x):
        d = {"a": 1}
        m = types.MappingProxyType(d)
        d["b"] = 2  # the view sees it
        c = m.copy()
        c["z"] = 3  # a dict, not the view
        return (x * len(m) + m["b"] + m.get("q", 4) + sum(m.values()) + len(c) +
                isinstance(m, dict) * 10 + (type(m) is types.MappingProxyType) * 100)
    _whole(f, X)


@pytest.mark.allow_fallback
def test_mappingproxy_write_raises_as_eager():
    def f(x):
        y = x * 2
        print("y", file=_SINK)  # a graph for y; the rest runs in the resume function
        m = types.MappingProxyType({"a": 1})
        try:
            m["a"] = 3
        except TypeError:
            return y - 1
        return y
    _same(torchc.compile(f)(X), f(X))


# ---- collections.Counter, torch.Size -----------------------------------------------------------

def test_counter_inplace_and_operators():
    def f(x):
        c = collections.Counter()
        for d in x.shape + (4, 4):
            c[d] += 1
        c.update([6, 7])
        c.update({7: 2})
        (top, k), = c.most_common(1)
        a, b = collections.Counter(a=3, b=1), collections.Counter(a=1, b=2)
        s, d, u, i = a + b, a - b, a | b, a & b
        return x * top + k + c[7] + c[99] + s["a"] + d["a"] + u["b"] + i["b"] + len(d) + c.total()
    _whole(f, X)


def test_torch_size_methods():
    def f(x):
        s = x.shape
        new = s[:-1] + (s[-1] // 2, 2)
        assert isinstance(new, torch.Size)
        return x.reshape(new).sum(-1) * s.numel() + s.count(6) + s.index(6)
    _whole(f, X)


# ---- str.format_map, re ------------------------------------------------------------------------

_LAYER = re.compile(r"(\w+)\.(\d+)")


def test_format_map_of_a_dict_of_constants():
    def f(x):
        names = {"prefix": "blocks"}
        names["idx"] = x.dim() + 1  # a dict the trace built (not a constant of the code)
        names.update(name="attn")
        key = "{prefix}.{idx}.{name}".format_map(names)
        return x * len(key)
    _whole(f, X)


def test_regex_on_constant_strings():
    """re's functions on constants are folded (a module-level compiled pattern too); its
    Match objects' methods are pure"""
    def f(x):
        m = re.match(r"layer_(\d+)", "layer_12")
        s = re.sub(r"\.(\d+)\.", r"[\1].", "model.layers.3.attn")
        g = _LAYER.search("blocks.7.mlp")
        a, b = g.groups()
        return (x * int(m.group(1)) + len(s) + len(re.findall(r"\d", "a1b22")) + int(b) + len(a) +
                g.span()[1] + len(_LAYER.sub("X", "a.1 b.2")) + (re.fullmatch("z", "a") is None))
    _whole(f, X)


def test_itertools_count_permutations_and_friends():
    def f(x):
        c = itertools.count(5, 2)
        a, b = next(c), next(c)
        p = list(itertools.permutations([1, 2, 3], 2))
        q = list(itertools.combinations_with_replacement("abc", 2))
        r = list(itertools.filterfalse(lambda v: v % 2, range(6)))
        return x * (a + b) + len(p) + p[3][0] * 10 + len(q) + len(r) + sum(r)
    _whole(f, X)
    from torchc import _polyfills  # the stand-ins yield what itertools yields, in its order
    assert list(_polyfills.permutations("abcd", 3)) == list(itertools.permutations("abcd", 3))
    assert list(_polyfills.combinations_with_replacement(range(3), 3)) == list(
        itertools.combinations_with_replacement(range(3), 3))


# ---- weakref.ref() of a value read from the frame ----------------------------------------------

class _Refs(nn.Module):
    """nn.RNNBase's idiom: weak references to its weights, compared with them each call"""
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(6))
        self.refs = [weakref.ref(self.w), None]

    def forward(self, x):
        changed = any(r is not None and r() is not self.w for r in self.refs)
        return x * self.w + (100.0 if changed else 0.0)


def test_weakref_call_reads_the_referent():
    m = _Refs()
    with torch.no_grad():
        _whole(m, X)
        cm = torchc.compile(m)
        keep = m.w
        m.w = nn.Parameter(torch.ones(6))  # the ref now names the old weight: eager's branch flips
        _same(cm(X), m(X))
        del keep  # the ref dies: r() is None, which is not self.w
        _same(cm(X), m(X))
