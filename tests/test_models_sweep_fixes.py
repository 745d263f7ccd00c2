"""Idioms found by benchmarks/sweep_tiny.py (every transformers architecture built from a tiny
random config) that broke graphs or ran eagerly: each as a small differential test against
eager that fails if torchc falls back (tests/conftest.py) or breaks the graph."""
import dataclasses

import pytest
import torch

import torchc
from conftest import captured_whole

tf = pytest.importorskip("transformers")


@dataclasses.dataclass
class Inner(tf.utils.ModelOutput):
    last_hidden_state: torch.Tensor = None
    hidden_states: tuple = None
    attentions: tuple = None


@dataclasses.dataclass
class Outer(tf.utils.ModelOutput):
    last_hidden_state: torch.Tensor = None
    hidden_states: tuple = None
    attentions: tuple = None
    image_hidden_states: torch.Tensor = None


def _same_output(a, b):
    assert type(a) is type(b) and list(a.keys()) == list(b.keys()), (type(a), list(a.keys()), list(b.keys()))
    for u, v in zip(a.to_tuple(), b.to_tuple()):
        torch.testing.assert_close(u, v, rtol=0, atol=0)


# multimodal wrappers: Outer(**language_model_outputs, image_hidden_states=...)
def f_record_kwargs(x, with_hidden):
    inner = Inner(last_hidden_state=x * 2, hidden_states=(x, x + 1) if with_hidden else None)
    return Outer(**inner, image_hidden_states=x.sum(-1))


def f_record_dict(x):
    inner = Inner(last_hidden_state=x - 1, attentions=(x * 3,))
    d = {**inner, "extra": x + 5}
    e = dict(inner)
    return d["last_hidden_state"] + d["extra"], tuple(d), len(e), e["attentions"][0]


@pytest.mark.parametrize("with_hidden", [False, True])
@pytest.mark.parametrize("shape", [(2, 3), (1, 1), (0, 4)])
def test_model_output_as_keyword_arguments(with_hidden, shape):
    x = torch.randn(shape)
    ref = f_record_kwargs(x, with_hidden)
    torchc.reset()
    ex = torchc.explain(f_record_kwargs)(x, with_hidden)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    _same_output(ex.result, ref)
    _same_output(torchc.compile(f_record_kwargs)(x, with_hidden), ref)


def test_model_output_merged_into_dicts():
    x = torch.randn(3, 5)
    ref = f_record_dict(x)
    torchc.reset()
    ex = torchc.explain(f_record_dict)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    a, keys, n, att = ex.result
    torch.testing.assert_close(a, ref[0])
    assert keys == ref[1] and n == ref[2]
    torch.testing.assert_close(att, ref[3])


def f_repeated_key(x):
    inner = Inner(last_hidden_state=x * 2)
    return Outer(**inner, last_hidden_state=x)  # eager: TypeError, multiple values


@pytest.mark.allow_fallback
def test_model_output_repeated_keyword_raises_as_eager():
    x = torch.randn(2, 2)
    with pytest.raises(TypeError):
        f_repeated_key(x)
    torchc.reset()
    with pytest.raises(TypeError, match="multiple values"):
        torchc.compile(f_repeated_key)(x)
    with pytest.raises(TypeError, match="multiple values"):
        torchc.compile(f_repeated_dict_key)(x)
    _same_output(torchc.compile(f_record_kwargs)(x, True), f_record_kwargs(x, True))


def _kw(a=None, b=None):
    return a * 2


def f_repeated_dict_key(x):
    d = {"a": x}
    return _kw(**d, a=x + 1)


# enumerate with a start (Qwen3-VL's mrope sections: enumerate((1, 2), start=1))
def f_enumerate_start(x, strides):
    out = []
    for i, s in enumerate(strides, start=1):
        out.append(x * i + s)
    for i, s in enumerate(strides, -2):
        out.append(x[..., :1] * i - s)
    out += [x + i for i, _ in enumerate([x, x], True)]
    return out


@pytest.mark.parametrize("strides", [(3, 4), (), (5,)])
def test_enumerate_with_start(strides):
    x = torch.randn(2, 3)
    ref = f_enumerate_start(x, strides)
    torchc.reset()
    ex = torchc.explain(f_enumerate_start)(x, strides)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    assert len(ex.result) == len(ref)
    for a, b in zip(ex.result, ref):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


# dict.fromkeys (linear-attention cache layers: dict.fromkeys(range(n), False))
def f_fromkeys(x, n):
    states = dict.fromkeys(range(n))
    flags = dict.fromkeys(("a", "b"), False)
    for k in states:
        states[k] = x * (k + 1)
    flags["a"] = True
    return [states[k] for k in states], flags, len(dict.fromkeys([]))


@pytest.mark.parametrize("n", [0, 1, 3])
def test_dict_fromkeys(n):
    x = torch.randn(4)
    ref = f_fromkeys(x, n)
    torchc.reset()
    ex = torchc.explain(f_fromkeys)(x, n)
    assert captured_whole(ex), ex
    got = ex.result
    assert got[1] == ref[1] and got[2] == ref[2] and len(got[0]) == len(ref[0])
    for a, b in zip(got[0], ref[0]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


# torch.eye (XLNet's relative attention: torch.eye(qlen) and masks built from it)
def f_eye(x, n, m):
    a = torch.eye(n) * 2
    b = torch.eye(n, m, dtype=torch.bool)
    c = torch.eye(n, m=m, dtype=torch.int64, device=x.device)
    return a, b, c, x[:n, :m] + torch.eye(n, m, dtype=x.dtype)


@pytest.mark.parametrize("n,m", [(3, 3), (1, 4), (4, 2), (0, 3), (5, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eye(n, m, dtype):
    x = torch.randn(6, 6, dtype=dtype)
    ref = f_eye(x, n, m)
    torchc.reset()
    ex = torchc.explain(f_eye)(x, n, m)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    for a, b in zip(ex.result, ref):
        assert a.dtype == b.dtype and a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_eye_follows_the_default_dtype():
    x = torch.randn(3)
    old = torch.get_default_dtype()
    cf = torchc.compile(lambda x: torch.eye(3) + x)
    try:
        torch.set_default_dtype(torch.float64)
        assert cf(x.double()).dtype == torch.float64
    finally:
        torch.set_default_dtype(old)
    assert cf(x).dtype == torch.float32


# x.to(other_tensor): other's dtype (XLNet: ((mask + eye) > 0).to(mask))
def f_to_tensor(x, m):
    a = (x > 0).to(m)
    b = x.to(m, copy=True) * 2
    c = m.to(x)
    return a, b, c, x.to(x)


@pytest.mark.parametrize("mdt", [torch.float64, torch.int32, torch.bool, torch.float32])
def test_to_other_tensor(mdt):
    x = torch.randn(3, 4)
    m = torch.ones(2, dtype=mdt)
    ref = f_to_tensor(x, m)
    torchc.reset()
    ex = torchc.explain(f_to_tensor)(x, m)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    for a, b in zip(ex.result, ref):
        assert a.dtype == b.dtype and a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=0, atol=0)


# An OrderedDict iterator passed into a frame (a comprehension over a ModelOutput's items()
# compiled as its own frame: Segformer's backbone wrapper): its items-left guard read
# __length_hint__, which OrderedDict iterators lack, so the guards rejected the frame they
# were made for (an internal fault; the frame ran eagerly).
def f_take(it, x):
    return [x * (v[1] if isinstance(v, tuple) else v) for v in it]


@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("view", ["values", "keys", "items"])
def test_ordered_dict_iterator_argument(n, view):
    import collections
    od = collections.OrderedDict((i, float(i + 1)) for i in range(n))
    x = torch.randn(3)
    cf = torchc.compile(f_take)
    for _ in range(2):
        it_e, it_c = iter(getattr(od, view)()), iter(getattr(od, view)())
        ref, got = f_take(it_e, x), cf(it_c, x)
        assert len(ref) == len(got) and list(it_c) == list(it_e) == []
        for a, b in zip(got, ref):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    ex = torchc.explain(f_take)(iter(od.items()), x)
    assert captured_whole(ex), ex
