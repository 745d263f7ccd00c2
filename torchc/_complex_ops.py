"""Complex tensors inside compiled graphs (dynamo_hook/ops_complex.c).

torchc's kernels have no complex arithmetic. A complex value is still a graph value (dtype
complex64/complex128, graph/graph.c), but every call that reads or makes one is an ATen
call: one CUSTOM extern per call, run through the same registry as custom operators
(torchc/_custom_ops.py `run`). Real values around it are ordinary graph values, fused and
compiled as usual (a complex extern's real output, e.g. `.abs()` or `view_as_real`, feeds
generated kernels; a real value feeds the extern as an operand).

At trace time `plan` runs the call on meta tensors of the operands' dtypes, sizes and
strides, which answers the output's dtype, sizes and strides (eager's), and records the call
under a key made from the callable, its constant arguments and the outputs. When the graph
runs, the registered callable is called on the graph's buffers and its result copied into
the extern's output buffer (the output is never an alias of an operand: a view in eager,
such as `x.real` or `view_as_real(x)`, is a copy here, and the trace marks it an alias of
its operand so that an in-place update of either is left to eager).

Left to eager, with the reason: calls that write an operand (their meta twin's version
changes), several complex outputs, outputs of several dtypes, non-tensor results other than
metadata (a bool, int, float, dtype or shape computed from meta tensors is a constant: the
operands' metadata is guarded), calls that raise on meta tensors, and calls on tensors that
require grad (their gradients are not captured: the caller checks that).
"""
import hashlib
import operator

import torch

from torchc import _custom_ops as _co
from torchc._custom_ops import Slot, _fill


class _Call:
    """A registered callable, as _custom_ops.run calls it (ov(*args, **kwargs), ov.name())."""

    __slots__ = ("fn", "text")

    def __init__(self, fn, text):
        self.fn = fn
        self.text = text

    def __call__(self, *a, **kw):
        return self.fn(*a, **kw)

    def name(self):
        return self.text


def _getattr_fn(name):
    def get(x):
        return getattr(x, name)
    get.__qualname__ = f"attr.{name}"
    return get


_CONST_TYPES = (bool, int, float, torch.dtype, torch.Size, type(None))
_NOT_META = ("data_ptr", "storage_offset", "untyped_storage", "storage", "item", "tolist")


def _fn_name(fn):
    if isinstance(fn, str):
        return fn
    mod = getattr(fn, "__module__", None) or ""
    qn = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    if isinstance(fn, torch._ops.OpOverload):
        return str(fn)
    return f"{mod}.{qn}" if mod else qn


def _has_complex(x):
    if isinstance(x, torch.Tensor):
        return x.is_complex()
    if isinstance(x, complex):
        return True
    if isinstance(x, torch.dtype):
        return x.is_complex
    if isinstance(x, (list, tuple)):
        return any(_has_complex(y) for y in x)
    return False


def _const_result(r):
    if isinstance(r, _CONST_TYPES):
        return True
    return isinstance(r, tuple) and all(isinstance(y, (bool, int, float)) for y in r)


def _out_desc(r):
    """(dtype, sizes, strides): eager's strides, as the meta call made them from the operands'
    eager strides. The extern's buffer is a contiguous copy whatever they are; the graph
    keeps them as eager's strides of the value (x.stride(), view checks, the layout of
    pointwise results and of a returned copy: graph/strides.c), a view's too (x.t().real:
    (2, 12) with holes, an expand's 0s)."""
    return (r.dtype, tuple(r.shape), tuple(r.stride()))


def _on_meta(x, dev, devkey):
    """x with the graph's device (a torch.device, or a str where a device is expected) as
    'meta' for the plan; another device raises ValueError (a move: left to eager)"""
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        return type(x)(_on_meta(y, dev, False) for y in x)
    if isinstance(x, torch.device) or (devkey and isinstance(x, str)):
        try:
            d = torch.device(x)
        except (RuntimeError, TypeError):
            return x  # not a device: the plan decides
        if d.type != dev.type or (d.index is not None and dev.index is not None and d.index != dev.index):
            raise ValueError(f"moves a tensor to {d}")
        return torch.device("meta")
    return x


# ops whose eager kernel of a complex input (a composite that resizes an empty out tensor)
# returns contiguous strides, where the meta kernel keeps the input's layout: torch.angle(x.t())
_CONTIGUOUS_OUT = frozenset({"angle"})


def plan(fn, args, kwargs, metas, force, dev="cpu"):
    """fn: a callable (a torch function, a Tensor method, an operator function) or
    'attr:<name>' (an attribute of the first argument). Returns
      None                     no complex value in or out and not force: not this path;
      str                      why the call is left to eager;
      ('const', value)         a metadata result (bool, int, float, dtype, shape);
      (key, name, outs, view, desc)  one CUSTOM extern: outs [(dtype, sizes, strides)], view
                               the Slot index whose view eager's result is (-1: none), desc
                               (method, args) that makes that view of Slot 0, or None;
      ('multi', [plans], islist)  several outputs: one such plan per output."""
    if isinstance(fn, str):
        name = fn[5:] if fn.startswith("attr:") else fn
        call = _getattr_fn(name)
        fname = f"Tensor.{name}"
    else:
        call = fn
        fname = _fn_name(fn)
    short = fname.rsplit(".", 1)[-1]
    try:
        ts = [torch.empty_strided(s, st, dtype=dt, device="meta") for dt, s, st in metas]
    except Exception as e:  # noqa: BLE001 - a layout meta tensors refuse
        return f"complex op {fname}: inputs: {type(e).__name__}: {e}"
    margs, mkwargs = _fill(tuple(args), ts), {k: _fill(v, ts) for k, v in kwargs.items()}
    try:  # the graph's device as 'meta' (x.to(x.device), torch.zeros(..., device=...))
        d = torch.device(dev)
        positional_dev = short in ("to", "cuda", "cpu")
        margs = tuple(_on_meta(a, d, positional_dev) for a in margs)
        mkwargs = {k: _on_meta(v, d, k == "device") for k, v in mkwargs.items()}
    except ValueError as e:
        if not force and not _has_complex((margs, mkwargs)):
            return None
        return f"complex op {fname} {e} (left to eager)"
    vers = [t._version for t in ts]
    try:
        with torch.device("meta"):  # factories (torch.zeros(..., dtype=complex64)) made on meta too
            r = call(*margs, **mkwargs)
    except Exception as e:  # noqa: BLE001 - eager's own error, or no meta kernel
        if not force and not _has_complex((margs, mkwargs)):
            return None
        msg = str(e).split("\n")[0][:160]
        return f"complex op {fname} raised on meta inputs ({type(e).__name__}: {msg}): left to eager"
    involved = force or _has_complex((margs, mkwargs)) or _has_complex(r if isinstance(r, (list, tuple)) else [r])
    if not involved:
        return None
    if any(t._version != v for t, v in zip(ts, vers)):
        return f"complex op {fname} writes an operand in place (left to eager)"
    if isinstance(r, (tuple, list)) and r and all(isinstance(x, torch.Tensor) for x in r):
        # several outputs (unbind, chunk, linalg.eig): one extern per output, each calling
        # the op and taking its own (the op runs once per output)
        if len(r) > 16:
            return f"complex op {fname} with {len(r)} outputs (left to eager)"
        subs = []
        for k, x in enumerate(r):
            sub = _register(_Item(call, k), f"{fname}[{k}]", args, kwargs, x, ts, lambda x=x: _part_desc(ts[0], x))
            if isinstance(sub, str):
                return sub
            subs.append(sub)
        return ("multi", subs, isinstance(r, list))
    if isinstance(r, torch.Tensor) and short in _CONTIGUOUS_OUT and ts and ts[0].is_complex():
        r = torch.empty(r.shape, dtype=r.dtype, device="meta")  # eager's layout, not the meta kernel's
    if not isinstance(r, torch.Tensor):
        if short in _NOT_META or not _const_result(r):
            return f"complex op {fname} returns {type(r).__name__} (left to eager)"
        return ("const", r)
    return _register(call, fname, args, kwargs, r, ts, lambda: _view_desc(fn, args, kwargs, metas))


class _Item:
    """call(...)[k]: one output of an op with several"""

    __slots__ = ("call", "k")

    def __init__(self, call, k):
        self.call, self.k = call, k

    def __call__(self, *a, **kw):
        return self.call(*a, **kw)[self.k]


def _part_desc(base, x):
    """x, one output of split / chunk / unbind & co (meta), as base.narrow(dim, start, length)
    or base.select(dim, index) when one of them makes exactly x's view, else None"""
    def same(v):
        return v.shape == x.shape and v.stride() == x.stride() and v.storage_offset() == x.storage_offset()
    for d in range(base.dim()):
        st = base.stride(d)
        off = x.storage_offset() - base.storage_offset()
        if st <= 0 or off % st:
            continue
        i = off // st
        try:
            if x.dim() == base.dim() and 0 <= i <= base.shape[d] and same(base.narrow(d, i, x.shape[d])):
                return ("narrow", (d, i, x.shape[d]))
            if x.dim() == base.dim() - 1 and 0 <= i < base.shape[d] and same(base.select(d, i)):
                return ("select", (d, i))
        except (RuntimeError, IndexError):
            continue
    return None


def _register(call, fname, args, kwargs, r, ts, desc_of):
    """the extern of one tensor result r (a meta tensor): (key, name, outs, view, desc)"""
    if r.device.type != "meta":
        return f"complex op {fname} returns a tensor on {r.device} (left to eager)"
    # eager's result a view of an operand (its storage: a dtype view of a meta tensor is no
    # _is_view()): the trace marks the copy an alias of it
    sid = r.untyped_storage()._cdata
    view = next((i for i, t in enumerate(ts) if t.untyped_storage()._cdata == sid), -1)
    desc = desc_of() if view == 0 and desc_of is not None else None
    outs = [_out_desc(r)]
    text = f"{fname}|{args!r}|{sorted(kwargs.items())!r}|{outs!r}"
    key = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)
    old = _co._registry.get(key)
    if old is not None and old[0] != text:
        return f"complex op {fname}: call key collision (left to eager)"
    _co._registry[key] = (text, _Call(call, fname), tuple(args), dict(kwargs), outs, -1)
    for i, t in enumerate(ts):  # each operand's gradient (graph/vjp_extern.c vjp_custom)
        if t.is_floating_point() or t.is_complex():
            vk = vjp_key(key, i)
            _co._registry[vk] = (f"d/d{i} {text}", _Call(_Vjp(call, tuple(args), dict(kwargs), i, len(ts)),
                                                            f"d/d{i} {fname}"),
                                 tuple(Slot(j) for j in range(len(ts) + 1)), {}, None, -1)
    return key, fname, outs, view, desc


_M64 = (1 << 64) - 1


def _signed(u):
    u &= _M64
    return u - (1 << 64) if u >> 63 else u


def vjp_key(key, i):
    """the extern key of operand i's gradient of the call `key` (inductor_c/ic.h
    ic_custom_vjp_key: the same arithmetic)"""
    return _signed(((key & _M64) ^ 0x5BD1E9955BD1E995) + (i + 1) * 0x9E3779B97F4A7C15)


CADD_KEY = 0x4341444447524144  # inductor_c/ic.h IC_CUSTOM_CADD_KEY: two complex gradients summed


class _Vjp:
    """operand i's gradient of call(*args, **kwargs): called with the call's n operands and the
    output's gradient; ATen's derivative (torch.autograd.grad of the call on operand i), so
    the convention is eager's (conjugate Wirtinger). A dtype view between complex and real
    (x.view(float32), the lowering of view_as_real / view_as_complex) is not differentiable
    in ATen: its gradient is the gradient viewed back, as view_as_real's and view_as_complex's
    backward are."""

    __slots__ = ("call", "args", "kwargs", "i", "n")

    def __init__(self, call, args, kwargs, i, n):
        self.call, self.args, self.kwargs, self.i, self.n = call, args, kwargs, i, n

    def __call__(self, *ins):
        ts, gy = list(ins[:self.n]), ins[self.n]
        g = _direct(self, ts, gy)
        if g is not None:
            return g
        x0 = ts[self.i]
        x = x0.detach().requires_grad_(True)
        ts[self.i] = x
        with torch.enable_grad():
            y = self.call(*_fill(self.args, ts), **{k: _fill(v, ts) for k, v in self.kwargs.items()})
            if y.requires_grad:
                (gx,) = torch.autograd.grad(y, x, gy, allow_unused=True)
                return torch.zeros_like(x0) if gx is None else gx
        if y.dtype != x0.dtype and y.is_complex() != x0.is_complex() and y.untyped_storage()._cdata == x.untyped_storage()._cdata:
            return gy.contiguous().view(x0.dtype).view(x0.shape)
        return torch.zeros_like(x0)


# the derivatives of the commonest complex calls written out, as ATen's formulas (the
# gradient is the conjugate Wirtinger one: d/dx of x * y is gy * conj(y)), so that the call is
# not run again for its autograd graph
_MUL = (operator.mul, torch.mul, torch.Tensor.mul)
_ADD = (operator.add, torch.add, torch.Tensor.add)
_SUB = (operator.sub, torch.sub, torch.Tensor.sub)
_DIV = (operator.truediv, torch.div, torch.true_divide, torch.Tensor.div)
_MATMUL = (operator.matmul, torch.matmul, torch.Tensor.matmul)
_ABS = (abs, torch.abs, torch.Tensor.abs)
_CONJ = (torch.conj, torch.Tensor.conj, torch.conj_physical, torch.Tensor.conj_physical)
_MATRIX_EXP = (torch.linalg.matrix_exp, torch.matrix_exp, torch.Tensor.matrix_exp)


def _is(fn, group):
    return any(fn is f for f in group)


def _to_input(g, x):
    """g as x's gradient: the real part for a real x, summed over broadcast dims, x's dtype"""
    if g.is_complex() and not x.is_complex():
        g = g.real
    if g.shape != x.shape:
        g = g.sum_to_size(x.shape)
    return g.to(x.dtype)


def _cj(v):
    return v.conj() if isinstance(v, torch.Tensor) else (v.conjugate() if isinstance(v, complex) else v)


def _direct(vjp, ts, gy):
    """operand i's gradient by an ATen formula, or None (the generic rule)"""
    fn, args, i = vjp.call, vjp.args, vjp.i
    if vjp.kwargs:
        return None
    slots = [k for k, a in enumerate(args) if isinstance(a, Slot) and a.i == i]
    if len(slots) != 1 or any(isinstance(a, (list, tuple)) for a in args):
        return None  # an operand used twice, or nested: the generic rule sums every use
    k = slots[0]
    a = _fill(args, ts)
    x = a[k]
    if len(a) == 2:
        o = a[1 - k]
        if _is(fn, _MUL):
            return _to_input(gy * _cj(o), x)
        if _is(fn, _ADD):
            return _to_input(gy, x)
        if _is(fn, _SUB):
            return _to_input(gy if k == 0 else -gy, x)
        if _is(fn, _DIV):
            return _to_input(gy / _cj(a[1]) if k == 0 else -gy * _cj(a[0] / a[1] / a[1]), x)
        if _is(fn, _MATMUL) and all(isinstance(t, torch.Tensor) and t.dim() >= 2 for t in a):
            return _to_input(gy @ a[1].mH if k == 0 else a[0].mH @ gy, x)
    elif len(a) == 1 and x.is_complex():
        if _is(fn, _ABS):
            return _to_input(gy * x.sgn(), x)
        if _is(fn, _CONJ):
            return _to_input(gy.conj(), x)
        if _is(fn, _MATRIX_EXP) and x.dim() >= 2:
            from torchc import _C
            return _to_input(_C.matrix_exp_vjp(x.contiguous(), gy.contiguous()), x)
    return None


_co._registry[CADD_KEY] = ("complex gradient sum", _Call(operator.add, "complex gradient sum"),
                           (Slot(0), Slot(1)), {}, None, -1)


# attributes that are views, as the method call that makes the same view (replayed on the
# real base at a graph break or when returned: dynamo_hook/sym_output.c)
_ATTR_VIEWS = {"mT": lambda nd: ("transpose", (-2, -1)), "mH": lambda nd: ("adjoint", ()),
               "H": lambda nd: ("adjoint", ()) if nd == 2 else None,
               "T": lambda nd: ("t", ()) if nd <= 2 else None}


def _const(x):
    if isinstance(x, Slot):
        return False
    if isinstance(x, (list, tuple)):
        return all(_const(y) for y in x)
    return True


def _view_desc(fn, args, kwargs, metas):
    """(method name, constant args): the view of operand 0 as base.name(*args), or None"""
    if not args or not isinstance(args[0], Slot) or args[0].i != 0 or kwargs or not _const(args[1:]):
        return None
    if isinstance(fn, str):
        make = _ATTR_VIEWS.get(fn[5:])
        return make(len(metas[0][1])) if make else None
    if fn is operator.getitem:
        return ("__getitem__", tuple(args[1:]))
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or not callable(getattr(torch.Tensor, name, None)):
        return None
    return (name, tuple(args[1:]))


BINARY = {0: operator.add, 1: operator.and_, 2: operator.floordiv, 3: operator.lshift, 4: operator.matmul,
          5: operator.mul, 6: operator.mod, 7: operator.or_, 8: operator.pow, 9: operator.rshift,
          10: operator.sub, 11: operator.truediv, 12: operator.xor}
