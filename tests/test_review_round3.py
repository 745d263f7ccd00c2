"""Review round 3 (issue 24): regression tests for defects found reviewing the merges of
543bf80..35d3058 (vmap, TorchFunctionMode, lazy dict guards, hasattr guards, polyfills).
Each test is differential against eager and failed before its fix."""
import pytest
import torch
import torch.nn.functional as F

import torchc


def _compiles():
    return torchc._C.stats()["compiles"]


# ---- dict key order (a trace iterating a dict is built for one order) ---------------------

def _fold_items(x, d):
    out = x
    for k, v in d.items():
        out = out * 2 + v
    return out


def test_dict_key_order_tensor_values():
    fn = _fold_items
    f = torchc.compile(fn)
    x = torch.ones(3)
    a, b = torch.full((3,), 1.0), torch.full((3,), 5.0)
    d1 = {"a": a, "b": b}
    d2 = {"b": b, "a": a}  # the same keys and values, the other order
    torch.testing.assert_close(f(x, d1), fn(x, d1))
    torch.testing.assert_close(f(x, d2), fn(x, d2))
    torch.testing.assert_close(f(x, d1), fn(x, d1))


def test_dict_key_order_constant_values_and_keys():
    def fn(x, d):
        out = x
        for k in d:
            out = out * d[k] + len(k)
        return out

    f = torchc.compile(fn)
    x = torch.ones(3)
    d1 = {"a": 2.0, "bbb": 3.0}
    d2 = {"bbb": 3.0, "a": 2.0}
    torch.testing.assert_close(f(x, d1), fn(x, d1))
    torch.testing.assert_close(f(x, d2), fn(x, d2))


def test_dict_key_order_unread_dict_no_extra_recompile():
    # a dict whose order the trace never depends on still hits its entry when reordered? The
    # order guard is conservative: reordering recompiles once, then both orders hit.
    def fn(x, d):
        return x * d["s"]

    f = torchc.compile(fn)
    x = torch.ones(3)
    d1 = {"s": 2.0, "t": 1.0}
    d2 = {"t": 1.0, "s": 2.0}
    torch.testing.assert_close(f(x, d1), fn(x, d1))
    torch.testing.assert_close(f(x, d2), fn(x, d2))
    c0 = _compiles()
    for _ in range(3):
        torch.testing.assert_close(f(x, d1), fn(x, d1))
        torch.testing.assert_close(f(x, d2), fn(x, d2))
    assert _compiles() == c0


def test_ordered_dict_move_to_end_is_guarded():
    import collections

    fn = _fold_items
    f = torchc.compile(fn)
    x = torch.ones(3)
    d = collections.OrderedDict(a=torch.full((3,), 1.0), b=torch.full((3,), 5.0))
    torch.testing.assert_close(f(x, d), fn(x, d))
    d.move_to_end("a")
    torch.testing.assert_close(f(x, d), fn(x, d))


def test_module_children_order_is_guarded():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(3, 3)
            self.b = torch.nn.Tanh()

        def forward(self, x):
            for m in self.children():
                x = m(x) * 2
            return x

    m = M()
    f = torchc.compile(m)
    x = torch.randn(2, 3)
    with torch.no_grad():
        torch.testing.assert_close(f(x), m(x))
        lin = m._modules.pop("a")
        m._modules["a"] = lin
        torch.testing.assert_close(f(x), m(x))


# ---- hasattr / getattr-with-default on a tensor ----------------------------------------------

def _has_hint(x):
    if hasattr(x, "scale_hint"):
        return x * 3
    return x + 1


@pytest.mark.parametrize("first_has", [False, True])
def test_hasattr_tensor_instance_attribute(first_has):
    # the attribute gained or lost by a later call's tensor: eager's branch each time
    f = torchc.compile(_has_hint)
    x = torch.randn(4)
    y = torch.randn(4)
    y.scale_hint = 2.0
    for t in (y, x, y) if first_has else (x, y, x):
        torch.testing.assert_close(f(t), _has_hint(t))


@pytest.mark.allow_fallback
def test_getattr_default_tensor_instance_attribute():
    def fn(x):
        return x * getattr(x, "scale_hint", 1.0)

    f = torchc.compile(fn)
    x = torch.randn(4)
    torch.testing.assert_close(f(x), fn(x))
    y = torch.randn(4)
    y.scale_hint = 2.0
    torch.testing.assert_close(f(y), fn(y))


def test_hasattr_tensor_type_property():
    # a property of the class the trace does not model: eager says True
    def fn(x):
        if hasattr(x, "is_leaf"):
            return x * 3
        return x + 1

    f = torchc.compile(fn)
    x = torch.randn(4)
    torch.testing.assert_close(f(x), fn(x))


# ---- string arguments that are not UTF-8 encodable (NULL from PyUnicode_AsUTF8) ------------

_BAD = "\ud800"  # a lone surrogate: PyUnicode_AsUTF8 fails


def _same_exception(f, fn, *args):
    with pytest.raises(Exception) as want:
        fn(*args)
    with pytest.raises(type(want.value)):
        f(*args)


@pytest.mark.allow_fallback
def test_interpolate_mode_not_utf8():
    def fn(x):
        return F.interpolate(x, scale_factor=2.0, mode=_BAD) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(1, 1, 4))


@pytest.mark.allow_fallback
def test_pad_mode_not_utf8():
    def fn(x):
        return F.pad(x, (1, 1), mode=_BAD) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(1, 2, 4))


@pytest.mark.allow_fallback
def test_gelu_approximate_not_utf8():
    def fn(x):
        return F.gelu(x, approximate=_BAD) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(4))


@pytest.mark.allow_fallback
def test_conv_padding_not_utf8():
    def fn(x, w):
        return F.conv1d(x, w, padding=_BAD) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(1, 2, 8), torch.randn(3, 2, 3))


@pytest.mark.allow_fallback
def test_einsum_equation_not_utf8():
    def fn(x):
        return torch.einsum(_BAD, x) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(3, 3))


@pytest.mark.allow_fallback
def test_loss_reduction_not_utf8():
    def fn(x, y):
        return F.mse_loss(x, y, reduction=_BAD) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(4), torch.randn(4))


# ---- torch.vmap arguments ----------------------------------------------------------------

@pytest.mark.allow_fallback
def test_vmap_in_dims_huge_int():
    def fn(x):
        return torch.vmap(lambda r: r * 2, in_dims=2**70)(x)

    _same_exception(torchc.compile(fn), fn, torch.randn(3, 4))


@pytest.mark.allow_fallback
def test_vmap_in_dims_sentinel_value():
    # -1000000 was the trace's own marker for in_dim None
    def fn(x, y):
        return torch.vmap(lambda r, q: r * q, in_dims=(0, -1000000))(x, y)

    _same_exception(torchc.compile(fn), fn, torch.randn(3, 4), torch.randn(4))


@pytest.mark.allow_fallback
def test_vmap_out_dims_huge_int():
    def fn(x):
        return torch.vmap(lambda r: r * 2, out_dims=2**70)(x)

    _same_exception(torchc.compile(fn), fn, torch.randn(3, 4))


# ---- int arguments out of range ----------------------------------------------------------

_HUGE = 2**70


@pytest.mark.allow_fallback
@pytest.mark.parametrize("op", ["roll", "narrow", "sum", "pad", "unsqueeze"])
def test_int_argument_out_of_range(op):
    # PyLong_AsLongLong's -1 was taken as the value: a result where eager raises
    fns = {
        "roll": lambda x: torch.roll(x, _HUGE, 0) + 1,
        "narrow": lambda x: x.narrow(0, _HUGE, 1) + 1,
        "sum": lambda x: x.sum(_HUGE) + 1,
        "pad": lambda x: F.pad(x, (_HUGE, 0)) + 1,
        "unsqueeze": lambda x: x.unsqueeze(_HUGE) + 1,
    }
    fn = fns[op]
    _same_exception(torchc.compile(fn), fn, torch.randn(3, 4))


# ---- hasattr of a class --------------------------------------------------------------------

class _Flagged:
    pass


def _class_flag(x):
    if hasattr(_Flagged, "flag"):
        return x * 3
    return x + 1


def test_hasattr_class_attribute_added_and_removed():
    # the answer was read from the class's MRO at trace time and not guarded
    f = torchc.compile(_class_flag)
    x = torch.ones(2)
    try:
        torch.testing.assert_close(f(x), _class_flag(x))
        _Flagged.flag = True
        torch.testing.assert_close(f(x), _class_flag(x))
        del _Flagged.flag
        torch.testing.assert_close(f(x), _class_flag(x))
    finally:
        if hasattr(_Flagged, "flag"):
            del _Flagged.flag


# ---- more int arguments out of range (round 2: the remaining PyLong_As* reads) -------------

def _rep_len(s, k):
    return len(s * k)


def _rep_len_left(s, k):
    return len(k * s)


_SCALAR_OOR = {
    # a Python int where torch takes a Scalar/int64: eager raises converting it; the trace read
    # PyLong_AsLongLong's -1 (a pending error: an internal fault) or wrapped it to a double
    "split": lambda x: [t + 1 for t in x.split(_HUGE)],
    "chunk": lambda x: [t + 1 for t in x.chunk(_HUGE)],
    "linspace": lambda x: torch.linspace(0, 1, _HUGE) + x.sum(),
    "list_repeat": lambda x: _rep_len([x], _HUGE) + x,
    "tuple_repeat_left": lambda x: _rep_len_left((x,), _HUGE) + x,
    "std_correction": lambda x: x.std(0, correction=_HUGE) + 1,
    "norm_p": lambda x: x.norm(p=_HUGE) + 1,
    "elu_alpha": lambda x: F.elu(x, alpha=_HUGE) + 1,
    "softplus_beta": lambda x: F.softplus(x, beta=_HUGE) + 1,
    "hardtanh": lambda x: F.hardtanh(x, -_HUGE, _HUGE) + 1,
    "leaky_relu": lambda x: F.leaky_relu(x, _HUGE) + 1,
    "addcmul_value": lambda x: torch.addcmul(x, x, x, value=_HUGE) + 1,
    "addmm_beta": lambda x: torch.addmm(x, x, torch.ones(4, 4), beta=_HUGE) + 1,
    "histc_max": lambda x: torch.histc(x, 10, min=0, max=_HUGE) + 1,
    "layer_norm_eps": lambda x: F.layer_norm(x, (4,), eps=10**400) + 1,
    "rot90": lambda x: x.rot90(_HUGE) + 1,
    "tril_indices": lambda x: x + torch.tril_indices(3, 3, _HUGE).sum(),
    "embedding_padding_idx": lambda x: F.embedding(torch.tensor([0]), x, padding_idx=_HUGE) + 1,
    "embedding_padding_idx_small": lambda x: F.embedding(torch.tensor([0]), x, padding_idx=3) + 1,
}


@pytest.mark.allow_fallback
@pytest.mark.parametrize("op", sorted(_SCALAR_OOR))
def test_int_argument_out_of_range_more(op):
    fn = _SCALAR_OOR[op]
    _same_exception(torchc.compile(fn), fn, torch.randn(3, 4))


def test_in_range_arguments_still_compile():
    # the checks above leave ordinary values traced
    def fn(x):
        a, b = x.split(2)
        return (F.elu(a, alpha=2) + F.embedding(torch.tensor([0, 2]), x, padding_idx=-1).sum() +
                x.std(0, correction=0).sum() + b.sum() + len([1] * 3) + x.rot90(5).sum())

    x = torch.randn(3, 4)
    torch.testing.assert_close(torchc.compile(fn)(x), fn(x))


# ---- hasattr of a class reached without a source (type(x)) --------------------------------

class _TypeFlagged:
    pass


def _type_flag(x, o):
    if hasattr(type(o), "flag"):
        return x * 3
    return x + 1


def test_hasattr_of_type_of_object_added_and_removed():
    # type(o) is a constant with no source: its hasattr answer was taken unguarded
    f = torchc.compile(_type_flag)
    x, o = torch.ones(2), _TypeFlagged()
    try:
        torch.testing.assert_close(f(x, o), _type_flag(x, o))
        _TypeFlagged.flag = True
        torch.testing.assert_close(f(x, o), _type_flag(x, o))
        del _TypeFlagged.flag
        torch.testing.assert_close(f(x, o), _type_flag(x, o))
    finally:
        if hasattr(_TypeFlagged, "flag"):
            del _TypeFlagged.flag


# ---- a tensor's instance attribute shadowing a method ------------------------------------

@pytest.mark.allow_fallback
@pytest.mark.parametrize("how", ["getattr", "attribute"])
def test_tensor_instance_attribute_shadows_method(how):
    def fn(x):
        s = getattr(x, "sum") if how == "getattr" else x.sum
        return x + s()

    f = torchc.compile(fn)
    x = torch.ones(3)
    torch.testing.assert_close(f(x), fn(x))  # no instance attribute: the method
    y = torch.ones(3)
    y.sum = lambda: 100.0  # eager: the instance attribute
    torch.testing.assert_close(f(y), fn(y))
    x.sum = lambda: 7.0
    torch.testing.assert_close(f(x), fn(x))


# ---- torch.jit.script inlining: only a ScriptFunction's _torchdynamo_inline -------------------

import functools  # noqa: E402


class _NotScript(functools.partial):
    # a callable of a C type with an attribute of that name: calling it is not calling the
    # attribute
    _torchdynamo_inline = staticmethod(lambda x: x * 100)


_not_script = _NotScript(torch.add, 5)


def _call_not_script(x):
    return _not_script(x) + 1


@pytest.mark.allow_fallback
def test_torchdynamo_inline_of_a_non_script_callable():
    x = torch.ones(3)
    torch.testing.assert_close(torchc.compile(_call_not_script)(x), _call_not_script(x))


# ---- hasattr / getattr-with-default of a function: the absence is guarded ----------------

def _helper_fn(x):
    return x


def _fn_flag(x):
    if hasattr(_helper_fn, "flag"):
        return x * 3
    return x + getattr(_helper_fn, "scale", 1.0)


def test_hasattr_of_function_attribute_added_and_removed():
    # a failed read of a function's attribute was taken as absent with no guard
    f = torchc.compile(_fn_flag)
    x = torch.ones(2)
    try:
        torch.testing.assert_close(f(x), _fn_flag(x))
        _helper_fn.scale = 5.0
        torch.testing.assert_close(f(x), _fn_flag(x))
        _helper_fn.flag = True
        torch.testing.assert_close(f(x), _fn_flag(x))
        del _helper_fn.flag, _helper_fn.scale
        torch.testing.assert_close(f(x), _fn_flag(x))
    finally:
        for n in ("flag", "scale"):
            if hasattr(_helper_fn, n):
                delattr(_helper_fn, n)
