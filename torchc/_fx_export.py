"""torchc.compile(f, backend=...): torchc's captured graphs handed to another backend.

torchc's frame hook captures each graph in its own IR (inductor_c/ic_ops.h, the text form of
inductor_c/graph/print.c). For backend="eager", "aot_eager", any other name Dynamo's registry
knows, or a callable taking (gm, example_inputs) as torch.compile's backends do, each captured
graph is exported here to a torch.fx.GraphModule — one call_function node per IR op (casts
where torch's type promotion would give another dtype than the IR's), inputs as placeholders
in the graph's input order, the outputs as a tuple — and the backend's compile function is
called with it and the first call's input tensors. What it returns runs in place of torchc's
compiled code; guards, graph breaks, resume functions and the replay of mutations stay
torchc's (dynamo_hook/backend.c).

A graph that cannot be exported (an op with no FX form here, symbolic shapes) is compiled by
torchc's own inductor as before, and the reason is logged on the torchc logger.
"""
import logging
import operator
import re

import torch
import torch.nn.functional as F

log = logging.getLogger("torchc")


class Unsupported(Exception):
    """The graph has something with no FX form here: torchc compiles it itself."""


_DTYPES = {"bool": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16,
           "i32": torch.int32, "i64": torch.int64, "f16": torch.float16, "bf16": torch.bfloat16,
           "f32": torch.float32, "f64": torch.float64, "c64": torch.complex64, "c128": torch.complex128}

# IR op -> torch callable taking the operands positionally (tensors or Python numbers)
_UNARY = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal, "sigmoid": torch.sigmoid,
    "tanh": torch.tanh, "relu": torch.relu, "gelu": F.gelu, "silu": F.silu, "sin": torch.sin,
    "cos": torch.cos, "logical_not": torch.logical_not, "floor": torch.floor, "ceil": torch.ceil,
    "round": torch.round, "trunc": torch.trunc, "sign": torch.sign, "erf": torch.erf,
    "log1p": torch.log1p, "expm1": torch.expm1, "log2": torch.log2, "exp2": torch.exp2,
    "tan": torch.tan, "atan": torch.atan, "asin": torch.asin, "acos": torch.acos,
    "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh, "isnan": torch.isnan, "isinf": torch.isinf,
    "isfinite": torch.isfinite, "bitwise_not": torch.bitwise_not,
}
# binary ops whose Python operator takes a number on either side with torch's wrapped-number
# promotion (the IR's scalars are weak like torch's wrapped numbers)
_BINARY_OPERATOR = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "pow": operator.pow, "eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
    "le": operator.le, "gt": operator.gt, "ge": operator.ge, "remainder": operator.mod,
    "floor_divide": operator.floordiv, "bitwise_and": operator.and_,
    "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
}
# binary ops that take tensors only (a number operand becomes a 0-d tensor)
_BINARY_TENSOR = {
    "maximum": torch.maximum, "minimum": torch.minimum, "logical_and": torch.logical_and,
    "logical_or": torch.logical_or, "logical_xor": torch.logical_xor, "atan2": torch.atan2,
    "fmod": torch.fmod,
}
_REDUCE = {"sum": torch.sum, "mean": torch.mean, "amax": torch.amax, "amin": torch.amin,
           "prod": torch.prod, "argmax": torch.argmax, "argmin": torch.argmin}


def _conv_channels_last(x, w, bias, stride, padding, dilation, groups):
    """torchc's channels-last conv extern: x and the result are [N, *spatial, C]."""
    nd = x.dim() - 2
    to_nchw = [0, nd + 1] + list(range(1, nd + 1))
    to_nhwc = [0] + list(range(2, nd + 2)) + [1]
    r = torch.convolution(x.permute(to_nchw), w, bias, stride, padding, dilation, False,
                          [0] * nd, groups)
    return r.permute(to_nhwc)


def _dropout_mask(x, p):
    """eager's dropout mask: bernoulli(1 - p) / (1 - p) in x's shape and dtype"""
    if p >= 1.0:
        return torch.zeros_like(x)
    return torch.empty_like(x).bernoulli_(1.0 - p).div_(1.0 - p)


def _matrix_exp_vjp(a, g):
    """the gradient of <g, exp(a)>: the top-right block of exp([[a^H, g], [0, a^H]])"""
    n = a.shape[-1]
    ah = a.transpose(-2, -1).conj()
    top = torch.cat([ah, g], -1)
    bottom = torch.cat([torch.zeros_like(ah), ah], -1)
    return torch.linalg.matrix_exp(torch.cat([top, bottom], -2))[..., :n, n:]


def parse(text):
    """graph text -> (nodes, outputs): nodes [(id, op, operands, attrs, words, (dtype, sizes,
    strides, syms))], outputs [value id]; syms: the dims as printed ("3", "s0", "3*s0^2"),
    or None when the value's shape is static"""
    nodes, outputs = [], []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("output "):
            outputs.append(int(line.split("=")[1].strip()[1:]))
            continue
        lhs, rhs = line.split(" = ", 1)
        body, meta = rhs.rsplit(" : ", 1)
        mparts = meta.split()
        dt, _, sz = mparts[0].partition("[")
        sizes = [int(s) for s in sz.rstrip("]").split(",") if s]
        strides = syms = None
        for m in mparts[1:]:
            if m.startswith("sym=["):
                syms = [d for d in m[5:].rstrip("]").split(",") if d]
            if m.startswith("strides=["):
                strides = [int(s) for s in m[9:].rstrip("]").split(",") if s]
        if dt not in _DTYPES:
            raise Unsupported(f"dtype {dt}")
        toks = body.split()
        op, operands, attrs, words = toks[0], [], {}, []
        for t in toks[1:]:
            if t.startswith("%"):
                operands.append(int(t[1:]))
            elif "=" in t:
                k, v = t.split("=", 1)
                attrs[k] = v
            else:
                words.append(t)
        nodes.append((int(lhs[1:]), op, operands, attrs, words, (_DTYPES[dt], sizes, strides, syms)))
    return nodes, outputs


def _ints(s):
    return [int(x) for x in s.strip("[]").split(",") if x]


_MONO = re.compile(r"^(?:(\d+)\*?)?((?:s\d+(?:\^\d+)?\*?)*)$")


class _Builder:
    def __init__(self, device):
        self.g = torch.fx.Graph()
        self.device = device
        self.env = {}    # IR value -> fx Node or Python number
        self.metas = {}  # IR value -> meta tensor (or number) for checking dtypes/shapes
        self.sym_src = {}  # symbol k -> (placeholder, dim) where an input has it as a dim
        self.sym_hint = {}  # symbol k -> its value at capture
        self.dims = {}   # dim text ("3*s0") -> fx Node computing it

    def dim(self, text, hint):
        """one dim of a symbolic shape as an FX value: an int, or a node computing
        coef * s_k^e * ... from the input sizes (sym_size of the input holding s_k)"""
        if text.lstrip("-").isdigit():
            return int(text)
        n = self.dims.get(text)
        if n is not None:
            return n
        m = _MONO.match(text)
        if m is None:
            raise Unsupported(f"symbolic dim {text}")
        coef = int(m.group(1) or 1)
        acc = None
        for f in (t for t in m.group(2).split("*") if t):
            k, _, e = f[1:].partition("^")
            src = self.sym_src.get(int(k))
            if src is None:
                raise Unsupported(f"symbol s{k} is no input's dim")
            p, d = src
            key = f"s{k}"
            v = self.dims.get(key)
            if v is None:
                v = self.dims[key] = self.call(torch.ops.aten.sym_size.int, (p, d), meta=self.sym_hint[int(k)])
            for _ in range(int(e or 1)):
                acc = v if acc is None else self.call(operator.mul, (acc, v), meta=self._meta(acc) * self._meta(v))
        if coef != 1:
            acc = self.call(operator.mul, (coef, acc), meta=coef * self._meta(acc))
        if self._meta(acc) != hint:
            raise Unsupported(f"symbolic dim {text}: {self._meta(acc)} at capture where the graph has {hint}")
        self.dims[text] = acc
        return acc

    def shape(self, sizes, syms):
        """a value's shape as FX values (ints where static)"""
        if syms is None:
            return tuple(sizes)
        return tuple(self.dim(t, h) for t, h in zip(syms, sizes))

    def arith(self, fn, a, b):
        """a (op) b on ints or dim nodes"""
        if not isinstance(a, torch.fx.Node) and not isinstance(b, torch.fx.Node):
            return fn(a, b)
        return self.call(fn, (a, b), meta=fn(self._meta(a), self._meta(b)))

    def tensor(self, v, dtype, exact=False):
        """operand v as a tensor: a number becomes a 0-d tensor with torch's promotion of
        a wrapped number of its kind (floats in the default dtype), or of dtype if exact"""
        x = self.env[v]
        if isinstance(x, torch.fx.Node):
            return x
        if dtype == torch.float64 and not exact:
            dtype = torch.get_default_dtype()
        return self.call(torch.scalar_tensor, (x,), {"dtype": dtype, "device": self.device},
                         torch.scalar_tensor(x, dtype=dtype, device="meta"))

    def call(self, target, args, kwargs=None, meta=None, method=False):
        kwargs = kwargs or {}
        if meta is None:
            margs = tuple(self._meta(a) for a in args)
            mkw = {k: self._meta(a) for k, a in kwargs.items()}
            try:
                meta = getattr(margs[0], target)(*margs[1:], **mkw) if method else target(*margs, **mkw)
            except Exception:  # no meta kernel: trust the IR's meta (set by the caller)
                meta = None
        n = (self.g.call_method(target, args, kwargs) if method
             else self.g.call_function(target, args, kwargs))
        n.meta["_torchc_meta"] = meta
        return n

    def _meta(self, a):
        if isinstance(a, torch.fx.Node):
            return a.meta.get("_torchc_meta")
        if isinstance(a, (list, tuple)):
            return type(a)(self._meta(x) for x in a)
        return a


def export(text, device="cpu", detach=()):
    """The graph text of one captured graph -> (GraphModule, number of inputs). Raises
    Unsupported for what has no FX form here. detach: ids of values whose result is detached
    (the graph's stop-gradient marks, for an eager replay with autograd: torchc/_autograd.py)."""
    nodes, outputs = parse(text)
    b = _Builder(torch.device(device))
    g = b.g
    inputs = sorted((int(w[0]) if w else a.get("index"), vid, meta)
                    for vid, op, _, a, w, meta in nodes if op == "input")
    specs = []  # per input: (dtype, sizes, strides, syms) for the backend's example inputs
    for idx, (i, vid, (dt, sizes, strides, syms)) in enumerate(inputs):
        if i != idx:
            raise Unsupported("graph inputs are not numbered 0..n-1")
        p = g.placeholder(f"arg{i}")
        p.meta["_torchc_meta"] = torch.empty_strided(sizes, strides or _contig(sizes), dtype=dt,
                                                     device="meta")
        b.env[vid] = p
        specs.append((dt, sizes, strides or _contig(sizes), syms))
        for d, t in enumerate(syms or ()):
            if t.startswith("s") and t[1:].isdigit() and int(t[1:]) not in b.sym_src:
                b.sym_src[int(t[1:])] = (p, d)
                b.sym_hint[int(t[1:])] = sizes[d]
    for _, (dt, sizes, strides, syms) in enumerate(specs):
        if syms and any(not t.isdigit() for t in syms) and list(strides) != _contig(sizes):
            raise Unsupported("a non-contiguous input with symbolic sizes")
    for vid, op, ins, attrs, words, (dt, sizes, _, syms) in nodes:
        if op == "input":
            continue
        if op == "scalar":
            s = words[0]
            v = float(s)
            b.env[vid] = bool(v) if dt == torch.bool else int(v) if dt == torch.int64 else v
            continue
        n = _emit(b, op, ins, attrs, words, dt, sizes, syms)
        b.env[vid] = _fix(b, n, op, dt, sizes)
        if vid in detach and isinstance(b.env[vid], torch.fx.Node):
            b.env[vid] = b.call("detach", (b.env[vid],), method=True)
    outs = []
    for o in outputs:
        x = b.env[o]
        if not isinstance(x, torch.fx.Node):
            raise Unsupported("a number as a graph output")
        outs.append(x)
    g.output(tuple(outs))
    for n in g.nodes:
        n.meta.pop("_torchc_meta", None)
    gm = torch.fx.GraphModule(torch.nn.Module(), g, class_name="TorchcGraph")
    gm.torchc_input_specs = specs if b.sym_src else None  # symbolic: the backend traces them so
    return gm, len(inputs)


def _contig(sizes):
    st, acc = [], 1
    for s in reversed(sizes):
        st.append(acc)
        acc *= max(s, 1)
    return list(reversed(st))


def _fix(b, n, op, dt, sizes):
    """the node's result checked against the IR's dtype and shape: a cast where torch
    promotes differently, Unsupported where the shape differs"""
    m = n.meta.get("_torchc_meta")
    if m is None:
        n.meta["_torchc_meta"] = torch.empty(sizes, dtype=dt, device="meta")
        return n
    if not isinstance(m, torch.Tensor):
        raise Unsupported(f"{op}: not a tensor")
    if list(m.shape) != list(sizes):
        raise Unsupported(f"{op}: shape {list(m.shape)} where the graph has {sizes}")
    if m.dtype != dt:
        return b.call("to", (n, dt), method=True)
    return n


def _emit(b, op, ins, attrs, words, dt, sizes, syms=None):
    env = b.env
    if op in _UNARY:
        return b.call(_UNARY[op], (b.tensor(ins[0], dt),))
    if op == "gelu_tanh":
        return b.call(F.gelu, (b.tensor(ins[0], dt),), {"approximate": "tanh"})
    if op in _BINARY_OPERATOR:
        x, y = env[ins[0]], env[ins[1]]
        if not isinstance(x, torch.fx.Node) and not isinstance(y, torch.fx.Node):
            x = b.tensor(ins[0], dt)
        return b.call(_BINARY_OPERATOR[op], (x, y))
    if op in _BINARY_TENSOR:
        x, y = env[ins[0]], env[ins[1]]
        if op in ("maximum", "minimum") and isinstance(x, torch.fx.Node) != isinstance(y, torch.fx.Node):
            t, s = (x, y) if isinstance(x, torch.fx.Node) else (y, x)  # symmetric ops
            if isinstance(s, float) and s != s:  # NaN propagates: clamp would too, but keep it plain
                pass
            return b.call(torch.clamp, (t,), {"min" if op == "maximum" else "max": s})
        return b.call(_BINARY_TENSOR[op], (b.tensor(ins[0], dt), b.tensor(ins[1], dt)))
    if op == "where":
        c = b.tensor(ins[0], torch.bool)
        return b.call(torch.where, (c, env[ins[1]], env[ins[2]]))
    if op == "cast":
        if not isinstance(env[ins[0]], torch.fx.Node):
            return b.tensor(ins[0], dt, exact=True)
        return b.call("to", (b.tensor(ins[0], dt), dt), method=True)
    if op in _REDUCE:
        x = b.tensor(ins[0], dt)
        dims = _ints(attrs.get("dims", "[]"))
        keep = "keepdim" in words
        xm = x.meta.get("_torchc_meta")
        nd = xm.dim() if isinstance(xm, torch.Tensor) else None
        if op in ("argmax", "argmin"):
            if len(dims) == 1:
                return b.call(_REDUCE[op], (x,), {"dim": dims[0], "keepdim": keep})
            if nd is not None and sorted(dims) == list(range(nd)):
                return b.call(_REDUCE[op], (x,), {"keepdim": keep} if keep else {})
            raise Unsupported(f"{op} over dims {dims}")
        kw = {"dim": dims if dims else None, "keepdim": keep}
        if op in ("sum", "mean", "prod"):
            kw["dtype"] = dt
        if op == "prod":  # torch.prod reduces one dim at a time
            if not dims:
                return b.call(torch.prod, (x,), {"dtype": dt})
            for d in sorted(dims, reverse=True):
                x = b.call(torch.prod, (x,), {"dim": d, "keepdim": keep, "dtype": dt})
            return x
        return b.call(_REDUCE[op], (x,), kw)
    if op == "reshape":
        return b.call(torch.reshape, (b.tensor(ins[0], dt), b.shape(sizes, syms)))
    if op == "permute":
        return b.call(torch.permute, (b.tensor(ins[0], dt), tuple(_ints(attrs["perm"]))))
    if op == "expand":
        return b.call("expand", (b.tensor(ins[0], dt), b.shape(sizes, syms)), method=True)
    if op == "slice":
        d, start, step = int(attrs["dim"]), int(attrs["start"]), int(attrs["step"])
        n = b.shape(sizes, syms)[d]
        if isinstance(n, torch.fx.Node) and step == 1:  # symbolic: start + n
            end = b.arith(operator.add, start, n)
        elif isinstance(n, torch.fx.Node):  # start + (n - 1) * step + 1 (n >= 2)
            end = b.arith(operator.add, start + 1, b.arith(operator.mul, b.arith(operator.sub, n, 1), step))
        else:
            end = start + (n - 1) * step + 1 if n > 0 else start
        return b.call(torch.ops.aten.slice.Tensor, (b.tensor(ins[0], dt), d, start, end, step))
    if op == "cat":
        return b.call(torch.cat, ([b.tensor(i, dt) for i in ins],), {"dim": int(attrs["dim"])})
    if op == "index_select":
        return b.call(torch.index_select, (b.tensor(ins[0], dt), int(attrs["dim"]),
                                           b.tensor(ins[1], torch.int64)))
    if op == "arange":
        start, step, n = float(attrs["start"]), float(attrs["step"]), b.shape(sizes, syms)[0]
        if dt.is_floating_point or start != int(start) or step != int(step):
            end = b.arith(operator.add, start, b.arith(operator.mul, b.arith(operator.sub, n, 0.5), step))
        else:
            start, step = int(start), int(step)
            end = b.arith(operator.add, start, b.arith(operator.mul, n, step))
        return b.call(torch.arange, (start, end, step), {"dtype": dt, "device": b.device})
    if op == "extern":
        return _extern(b, ins, attrs, words, dt)
    raise Unsupported(f"op {op}")


def _extern(b, ins, attrs, words, dt):
    kind = words[0] if words else "?"
    p = _ints(attrs.get("params", "[]"))
    beta, alpha = float(attrs.get("beta", 1)), float(attrs.get("alpha", 1))
    t = [b.tensor(i, dt) for i in ins]
    if kind == "mm":
        return b.call(torch.mm, tuple(t))
    if kind == "bmm":
        return b.call(torch.bmm, tuple(t))
    if kind == "matmul":
        return b.call(torch.matmul, tuple(t))
    if kind == "addmm":
        return b.call(torch.addmm, tuple(t), _scales(beta, alpha))
    if kind == "baddbmm":
        return b.call(torch.baddbmm, tuple(t), _scales(beta, alpha))
    if kind == "linear":
        return b.call(F.linear, tuple(t))
    if kind == "conv":
        nd = p[0]
        stride, padding, dilation = p[1:1 + nd], p[1 + nd:1 + 2 * nd], p[1 + 2 * nd:1 + 3 * nd]
        groups = p[1 + 3 * nd]
        bias = t[2] if len(t) == 3 else None
        if len(p) == 3 + 3 * nd and p[2 + 3 * nd] == 1:
            return b.call(_conv_channels_last, (t[0], t[1], bias, stride, padding, dilation, groups))
        return b.call(torch.convolution, (t[0], t[1], bias, stride, padding, dilation, False,
                                          [0] * nd, groups))
    if kind == "sdpa":
        kw = {"attn_mask": t[3] if len(t) == 4 else None, "dropout_p": 0.0,
              "is_causal": bool(p[0]) if p else False, "scale": beta}
        return b.call(F.scaled_dot_product_attention, tuple(t[:3]), kw)
    if kind in ("gather", "scatter", "scatter_add"):
        fn = {"gather": torch.gather, "scatter": torch.scatter, "scatter_add": torch.scatter_add}[kind]
        return b.call(fn, (t[0], p[0], *t[1:]))
    if kind in ("cumsum", "cumprod"):
        return b.call(torch.cumsum if kind == "cumsum" else torch.cumprod, (t[0], p[0]), {"dtype": dt})
    if kind == "argsort":
        return b.call(torch.argsort, (t[0],), {"dim": p[0], "descending": bool(p[1]), "stable": bool(p[2])})
    if kind == "matrix_exp":
        return b.call(torch.linalg.matrix_exp, (t[0],))
    if kind == "matrix_exp_vjp":
        return b.call(_matrix_exp_vjp, tuple(t))
    if kind == "solve":
        return b.call(torch.linalg.solve, tuple(t), {"left": bool(p[0]) if p else True})
    if kind == "dropout_mask":
        return b.call(_dropout_mask, (t[0], beta))
    if kind == "custom" and len(p) >= 4 and p[1] == 0:
        from ._custom_ops import _registry
        ent = _registry.get(p[0])
        if ent is not None and ent[4] is not None and len(ent[4]) == 1:
            return b.call(_CustomCall(p[0]), tuple(t))
    raise Unsupported(f"extern {kind}")


class _CustomCall:
    """a CUSTOM extern's call (a complex ATen call, torchc/_complex_ops.py, or a custom op) as
    eager runs it: with autograd, so an eager replay of the graph is differentiable"""

    def __init__(self, key):
        self.key = key
        self.__name__ = f"custom_{key & 0xFFFFFFFF:08x}"

    def __call__(self, *ins):
        from ._custom_ops import _fill, _registry
        _, ov, args, kwargs, _, _ = _registry[self.key]
        return ov(*_fill(args, ins), **{k: _fill(v, ins) for k, v in kwargs.items()})


def _scales(beta, alpha):
    return {"beta": int(beta) if beta == int(beta) else beta,
            "alpha": int(alpha) if alpha == int(alpha) else alpha}


def resolve(backend):
    """backend (a name in Dynamo's registry, or a callable) -> (compile function, name)"""
    if callable(backend):
        return backend, getattr(backend, "__name__", type(backend).__name__)
    from torch._dynamo.backends.registry import lookup_backend
    return lookup_backend(backend), backend


def _symbolic_inputs(specs, inputs):
    """Fake tensors for a graph with symbolic shapes, as Dynamo's backends see them: one
    ShapeEnv, a symbol per torchc symbol (no duck sizing: symbols equal at capture stay
    distinct, as torchc's guards keep them), hinted by this call's sizes. -> (fake mode,
    shape env, fake inputs)"""
    from torch._dynamo.source import ConstantSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv
    env = ShapeEnv(duck_shape=False)
    mode = FakeTensorMode(shape_env=env)
    syms = {}

    def dim(text, real):
        if text.isdigit():
            return int(text)
        acc = 1
        m = _MONO.match(text)
        for f in (t for t in m.group(2).split("*") if t):
            k, _, e = f[1:].partition("^")
            v = syms.get(k)
            if v is None:
                if e or m.group(1):
                    raise Unsupported(f"symbolic input dim {text}")
                v = syms[k] = env.create_symintnode(
                    env.create_symbol(real, ConstantSource(f"s{k}"), dynamic_dim=DimDynamic.DYNAMIC),
                    hint=real)
            acc = acc * v ** int(e or 1)
        return acc * int(m.group(1) or 1)

    fakes = []
    with mode:
        for (dt, _, strides, syms_), x in zip(specs, inputs):
            if not syms_:
                fakes.append(torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device))
                continue
            sizes = [dim(t, n) for t, n in zip(syms_, x.shape)]
            st, acc = [], 1
            for n in reversed(sizes):  # symbolic inputs are contiguous (torchc's guards)
                st.append(acc)
                acc = acc * n
            fakes.append(torch.empty_strided(sizes, st[::-1], dtype=x.dtype, device=x.device))
    return mode, env, fakes


class BackendGraph:
    """One exported graph: the backend's compile function is called at the first run with
    the GraphModule and that run's inputs; what it returns runs from then on. A graph with
    symbolic shapes is handed over with fake tensors of symbolic sizes (and Dynamo's tracing
    context, so AOT autograd and Inductor trace it symbolically): one backend compile serves
    every size torchc's guards let in. Where the backend's code added guards of its own on
    the sizes (Inductor: "s0 <= 4096") and a call fails them, the GraphModule runs op by op."""

    __slots__ = ("gm", "compiler", "backend_name", "fn", "ninputs", "env", "fakes")

    def __init__(self, gm, compiler, backend_name, ninputs):
        self.gm, self.compiler, self.backend_name, self.ninputs = gm, compiler, backend_name, ninputs
        self.fn = self.env = self.fakes = None

    def _compile(self, inputs):
        specs = getattr(self.gm, "torchc_input_specs", None)
        if specs is None:
            return self.compiler(self.gm, list(inputs))
        from torch._guards import TracingContext, tracing
        mode, env, fakes = _symbolic_inputs(specs, inputs)
        with tracing(TracingContext(mode)):
            fn = self.compiler(self.gm, fakes)
        if env.guards or env.replacements:  # the backend specialized or bounded a symbol
            self.env, self.fakes = env, fakes
        return fn

    def __call__(self, *inputs):
        fn = self.fn
        if fn is None:
            fn = self._compile(inputs)
            if fn is None or not callable(fn):
                raise RuntimeError(f"torchc.compile: backend {self.backend_name!r} returned "
                                   f"{fn!r}, not a callable")
            self.fn = fn
        if self.env is not None and not self.env.evaluate_guards_for_args(self.fakes, list(inputs),
                                                                          ignore_static=False):
            fn = self.gm  # sizes the backend's code was not compiled for
        out = fn(*inputs)
        if isinstance(out, torch.Tensor):
            out = (out,)
        return tuple(out)


def compile_graph(backend, text, device):
    """Called by dynamo_hook/backend.c for each captured graph of a torchc.compile(...,
    backend=...) function: a BackendGraph, or None when torchc compiles the graph itself
    (the reason is logged)."""
    try:
        gm, n = export(text, device)
    except Unsupported as e:
        log.warning("torchc: a captured graph is compiled by torchc, not the backend %r: %s",
                    backend if isinstance(backend, str) else getattr(backend, "__name__", backend), e)
        return None
    compiler, name = resolve(backend)
    return BackendGraph(gm, compiler, name, n)
