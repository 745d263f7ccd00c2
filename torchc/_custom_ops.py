"""Custom operators inside compiled graphs (dynamo_hook/ops_custom.c, csrc/custom_extern.cpp).

A call of `torch.ops.<ns>.<op>` (an OpOverloadPacket or OpOverload) or of an op made with
`torch.library.custom_op` / `torch.library.define` becomes one CUSTOM extern of the graph:

- at trace time, `plan` binds the traced arguments to the op's schema (tensors stand as
  `Slot(i)`, everything else must be a constant), runs the op on meta tensors of the inputs'
  dtypes, sizes and strides (a registered fake/abstract impl answers there; no fake impl:
  not captured, with the reason) and records the call under a key made from the qualified
  name, the constant arguments and the output metas;
- when the graph runs, `run` calls the same OpOverload through the dispatcher on the graph's
  buffers and copies its result into the extern's output (several outputs of one dtype: one
  flat buffer, sliced by the trace).

A tensor the schema marks as written (`Tensor(a!)`) is updated as eager updates it: the
extern's output is that tensor's new value (the op runs on a copy with eager's strides), and
the trace rebinds the argument to it. Ops returning views of their inputs, lists of written
tensors, non-tensor results or nothing at all (side effects only) are left to eager.
"""
import hashlib

import torch

_registry = {}  # key (int64) -> (text, overload, args, kwargs, outs, mutated)


class Slot:
    """The i-th tensor operand of the extern, standing in a traced argument list."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return f"<T{self.i}>"


def _fill(x, ts):
    if isinstance(x, Slot):
        return ts[x.i]
    if isinstance(x, list):
        return [_fill(y, ts) for y in x]
    if isinstance(x, tuple):
        return tuple(_fill(y, ts) for y in x)
    return x


def _overload(op, metas_args, metas_kwargs):
    """the OpOverload a call of op resolves to (as the packet's own call resolves it)"""
    from torch._library.custom_ops import CustomOpDef

    if isinstance(op, CustomOpDef):
        return op._opoverload
    if isinstance(op, torch._ops.OpOverload):
        return op
    names = op.overloads()
    if len(names) == 1:
        return getattr(op, names[0])
    name = torch._C._jit_resolve_packet(op._qualified_op_name, *metas_args, **metas_kwargs)
    return getattr(op, name)


def _bind(schema, args, kwargs):
    """schema argument index -> value (positional then keyword), or raise TypeError"""
    formal = schema.arguments
    if len(args) > len(formal):
        raise TypeError("too many arguments")
    got = {}
    for i, a in enumerate(args):
        if formal[i].kwarg_only:
            raise TypeError("too many positional arguments")
        got[i] = a
    names = {f.name: i for i, f in enumerate(formal)}
    for k, v in kwargs.items():
        if k not in names or names[k] in got:
            raise TypeError(f"unexpected keyword {k}")
        got[names[k]] = v
    return got


def _meta_desc(t):
    return (t.dtype, tuple(t.shape), tuple(t.stride()))


def plan(op, args, kwargs, metas):
    """(key, name, outs, mutated, islist) for a traced call, or a str: why it is left to
    eager. metas: (dtype, sizes, strides) of each Slot; outs: (dtype, sizes, strides) per
    output; mutated: the Slot index the op writes (-1: none); islist: the op returns a list."""
    try:
        ts = [torch.empty_strided(s, st, dtype=dt, device="meta") for dt, s, st in metas]
    except Exception as e:  # noqa: BLE001 - a layout meta tensors refuse
        return f"custom op inputs: {type(e).__name__}: {e}"
    margs, mkwargs = _fill(tuple(args), ts), {k: _fill(v, ts) for k, v in kwargs.items()}
    try:
        ov = _overload(op, margs, mkwargs)
    except Exception as e:  # noqa: BLE001
        return f"custom op {op}: no overload for these arguments ({type(e).__name__})"
    name = ov.name()
    schema = ov._schema
    try:
        bound = _bind(schema, args, kwargs)
    except TypeError as e:
        return f"custom op {name}: {e} (eager raises)"
    mutated = -1
    for i, a in enumerate(schema.arguments):
        ai = a.alias_info
        if ai is None or not ai.is_write or i not in bound or bound[i] is None:
            continue
        v = bound[i]
        if not isinstance(v, Slot) or mutated >= 0:
            return f"custom op {name} writes a list of tensors or several tensors (left to eager)"
        mutated = v.i
    if any(r.alias_info is not None for r in schema.returns):
        return f"custom op {name} returns a view of an input (left to eager)"
    if mutated >= 0 and sum(1 for a in args if isinstance(a, Slot) and a.i == mutated) + sum(
            1 for a in kwargs.values() if isinstance(a, Slot) and a.i == mutated) != 1:
        return f"custom op {name}: the written tensor is passed twice (left to eager)"
    try:
        r = ov(*margs, **mkwargs)
    except Exception as e:  # noqa: BLE001 - no fake impl, a data-dependent one, or eager's own error
        msg = str(e).split("\n")[0][:160]
        if isinstance(e, NotImplementedError) or "fake impl" in msg or "Meta" in msg:
            return f"custom op {name} has no fake/meta impl to give its output shapes: {msg}"
        return f"custom op {name} raised on meta inputs ({type(e).__name__}: {msg})"
    islist = isinstance(r, list)
    if isinstance(r, torch.Tensor):
        outs = [_meta_desc(r)]
    elif r is None or (isinstance(r, (tuple, list)) and len(r) == 0):
        outs = []
    elif isinstance(r, (tuple, list)) and all(isinstance(x, torch.Tensor) for x in r):
        outs = [_meta_desc(x) for x in r]
    else:
        return f"custom op {name} returns {type(r).__name__} (not tensors: left to eager)"
    if mutated >= 0 and outs:
        return f"custom op {name} both writes an input and returns tensors (left to eager)"
    if mutated < 0 and not outs:
        return f"custom op {name} returns nothing and writes nothing (side effects only: left to eager)"
    if len({o[0] for o in outs}) > 1:
        return f"custom op {name} returns tensors of several dtypes (left to eager)"
    text = f"{name}|{args!r}|{sorted(kwargs.items())!r}|{outs!r}|{mutated}"
    key = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)
    old = _registry.get(key)
    if old is not None and old[0] != text:
        return f"custom op {name}: call key collision (left to eager)"
    _registry[key] = (text, ov, tuple(args), dict(kwargs), outs, mutated)
    return key, name, outs, mutated, islist


def run(key, ins, out, strides):
    """The extern's body: ins are the operands (the graph's buffers), out the output buffer
    (contiguous), strides eager's strides of the written operand (or None)."""
    _, ov, args, kwargs, outs, mutated = _registry[key]
    ins = list(ins)
    if mutated >= 0:
        w = torch.empty_strided(out.shape, strides, dtype=out.dtype, device=out.device)
        w.copy_(ins[mutated])
        ins[mutated] = w
    r = ov(*_fill(args, ins), **{k: _fill(v, ins) for k, v in kwargs.items()})
    if mutated >= 0:
        out.copy_(ins[mutated])
        return
    if outs is None:  # a gradient extern (torchc/_complex_ops.py): the output buffer's meta
        if not isinstance(r, torch.Tensor) or r.dtype != out.dtype or r.shape != out.shape:
            raise RuntimeError(f"{ov.name()} returned {getattr(r, 'dtype', type(r))} "
                               f"{tuple(getattr(r, 'shape', ()))}, the graph expects {out.dtype} {tuple(out.shape)}")
        out.copy_(r)
        return
    rs = [r] if isinstance(r, torch.Tensor) else list(r)
    if len(rs) != len(outs):
        raise RuntimeError(f"custom op {ov.name()} returned {len(rs)} tensors, its fake impl {len(outs)}")
    off = 0
    for x, (dt, sz, _) in zip(rs, outs):
        if not isinstance(x, torch.Tensor) or x.dtype != dt or tuple(x.shape) != sz:
            raise RuntimeError(f"custom op {ov.name()} returned {getattr(x, 'dtype', type(x))} "
                               f"{tuple(getattr(x, 'shape', ()))}, its fake impl {dt} {sz}")
        if len(outs) == 1:
            out.copy_(x)
        else:
            n = x.numel()
            out[off:off + n].view(sz).copy_(x)
            off += n


# Custom ops with a registered autograd formula (torch.library.custom_op + register_autograd)
# called on tensors that require grad: the call is traced as a call of the function returned
# here, an autograd.Function of the op's own formula (what torch's autograd kernel for the op
# runs, torch/_library/autograd.py): forward = the op (captured as the CUSTOM extern: inside an
# autograd.Function's forward grad mode is off) + setup_context, backward = the registered
# backward (traced into the backward graph by dynamo_hook/autograd_fn.c). None (the call is
# left to eager, with the reason) for ops without a formula, ops of torch.library.define +
# register_autograd (their formula is held by the kernel only), keyword-only arguments, and
# calls that leave arguments to their defaults (eager's setup_context is given them filled in).
_autograd_calls = {}


def autograd_call(op, nargs, kwnames=None):
    from torch._library.custom_ops import CustomOpDef, _maybe_get_opdef

    try:
        if isinstance(op, CustomOpDef):
            opdef, ov = op, op._opoverload
        elif isinstance(op, torch._ops.OpOverload):
            opdef, ov = _maybe_get_opdef(op), op
        elif isinstance(op, torch._ops.OpOverloadPacket) and len(op.overloads()) == 1:
            ov = getattr(op, op.overloads()[0])
            opdef = _maybe_get_opdef(ov)
        else:
            return None
    except Exception:  # noqa: BLE001 - not a custom op of torch.library.custom_op
        return None
    if opdef is None or getattr(opdef, "_backward_fn", None) is None:
        return None
    formal = ov._schema.arguments
    names = tuple(f.name for f in formal)
    kw = tuple(kwnames or ())
    npos = nargs - len(kw)
    if nargs != len(formal) or any(f.kwarg_only for f in formal) or set(kw) != set(names[npos:]):
        return None
    key = (id(op), npos, kw)
    hit = _autograd_calls.get(key)
    if hit is not None and hit[0] is op:
        return hit[1]
    backward_fn, setup = opdef._backward_fn, opdef._setup_context_fn

    class CustomOpAutograd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            out = op(*args)
            if setup is not None:
                setup(ctx=ctx, inputs=args, output=out)
            return out

        @staticmethod
        def backward(ctx, *grads):
            r = backward_fn(ctx, *grads)
            return r if isinstance(r, tuple) else (r,)

    rest = names[npos:]  # given by keyword: put back in the schema's order

    def call(*args, **kwargs):
        return CustomOpAutograd.apply(*args, *[kwargs[n] for n in rest])

    _autograd_calls[key] = (op, call)
    return call
