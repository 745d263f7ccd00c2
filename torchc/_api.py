"""The thin Python API over torchc._C: compile(), explain(), reset(), disable(), config."""
import functools
import types

import torch

from . import _C
from . import _cudagraphs


class _Config:
    """torchc.config: process-wide settings (validated on assignment)."""

    def __init__(self):
        object.__setattr__(self, "_values", {"recompile_limit": 8, "num_threads": _C.get_num_threads(),
                                             "automatic_dynamic_shapes": True,
                                             # limits of one trace, named in explain() when hit
                                             "max_sources": 1 << 20, "inline_depth": 48,
                                             "max_outputs": 1 << 16})

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"torchc.config has no setting {name!r}") from None

    def __setattr__(self, name, value):
        if name not in self._values:
            raise AttributeError(f"torchc.config has no setting {name!r}")
        if name == "automatic_dynamic_shapes":
            if not isinstance(value, bool):
                raise ValueError(f"torchc.config.{name} must be a bool, got {value!r}")
            self._values[name] = value
            return
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"torchc.config.{name} must be a positive int, got {value!r}")
        if name == "recompile_limit":
            _C.set_recompile_limit(value)
        elif name == "num_threads":
            _C.set_num_threads(value)
        elif name in ("max_sources", "inline_depth", "max_outputs"):
            _C.set_limit(name, value)
        self._values[name] = value

    def __repr__(self):
        return f"torchc.config({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"


config = _Config()

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def _check_options(backend, mode, options):
    if backend not in (None, "inductor", "torchc"):
        raise ValueError(f"torchc.compile: unsupported backend {backend!r}")
    if mode not in _MODES:
        raise ValueError(f"torchc.compile: unknown mode {mode!r}; expected one of {_MODES[1:]}")
    if options is not None and not isinstance(options, dict):
        raise TypeError("torchc.compile: options must be a dict")


class OptimizedModule(torch.nn.Module):
    """What torchc.compile(module) returns: forwards to the original module, with its
    forward frames captured by torchc. Parameters are shared with the original."""

    def __init__(self, mod, compiled_call):
        super().__init__()
        self._orig_mod = mod
        self._torchc_call = compiled_call

    def forward(self, *args, **kwargs):
        return self._torchc_call(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._orig_mod, name)


def _dynamic_flag(dynamic):
    """torch.compile's dynamic: None = automatic (a dim that changes is made dynamic),
    False = always specialize, True = every dim of the tensor arguments symbolic."""
    if dynamic is None:
        return -1 if config.automatic_dynamic_shapes else 0
    if not isinstance(dynamic, bool):
        raise TypeError(f"dynamic must be None, True or False, got {dynamic!r}")
    return int(dynamic)


def _adaptive(options):
    """mode="reduce-overhead": options={"cudagraph_adaptive": False} replays CUDA graphs even
    where a normal call is faster (torchc/_cudagraphs.py)."""
    return bool((options or {}).get("cudagraph_adaptive", True))


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """torch.compile's signature. Returns a compiled function or an OptimizedModule."""
    _check_options(backend, mode, options)
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    if disable:
        return model
    if isinstance(model, torch.nn.Module):
        fwd = getattr(type(model).forward, "__code__", None)
        if fwd is not None:  # torch's own modules live in skipped files: capture their forward
            _C.allow_code(fwd)
        call = _C.CompiledFunction(model, bool(fullgraph), _dynamic_flag(dynamic))
        if mode == "reduce-overhead" and fwd is not None:
            call = _cudagraphs.CUDAGraphed(call, type(model).forward, (model,), module=model,
                                           adaptive=_adaptive(options))
        return OptimizedModule(model, call)
    if not callable(model):
        raise TypeError(f"torchc.compile expects a callable or nn.Module, got {type(model).__name__}")
    cf = _C.CompiledFunction(model, bool(fullgraph), _dynamic_flag(dynamic))
    try:
        functools.update_wrapper(cf, model)
    except (AttributeError, TypeError):
        pass
    if mode == "reduce-overhead":
        if isinstance(model, types.MethodType):
            cf = _cudagraphs.CUDAGraphed(cf, model.__func__, (model.__self__,), adaptive=_adaptive(options))
        elif isinstance(model, types.FunctionType):
            cf = _cudagraphs.CUDAGraphed(cf, model, adaptive=_adaptive(options))
        try:
            functools.update_wrapper(cf, model)
        except (AttributeError, TypeError):
            pass
    return cf


def disable(fn=None, recursive=True):
    """Never capture fn's frame: it runs eagerly even when called from compiled code."""
    if fn is None:
        return functools.partial(disable, recursive=recursive)
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError(f"torchc.disable expects a Python function, got {type(fn).__name__}")
    _C.skip_code(code)
    return fn


def allow_in_graph(fn):
    """Capture calls of fn into the caller's graph (inline it) even where torchc would
    otherwise not: undoes torchc.disable(fn), and lets frames of fn be captured when it
    lives in a skipped file. Returns fn."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError(f"torchc.allow_in_graph expects a Python function, got {type(fn).__name__}")
    _C.allow_code(code)
    return fn


def reset():
    """Forget every compiled graph (like torch._dynamo.reset())."""
    _C.reset()
    _cudagraphs.reset_all()


class ExplainOutput:
    """What torchc.explain(fn)(*args) returns."""

    def __init__(self, records, result, cudagraphs=()):
        self.records = records
        self.result = result
        # mode="reduce-overhead": what the CUDA graph layer did on this call
        # ({"event": warmup|captured|replayed|fallback, "reason": str or None})
        self.cudagraphs = list(cudagraphs)
        compiled = [r for r in records if r["event"] in ("compiled", "hit") and not r.get("fallback")]
        fallbacks = [r for r in records if r["event"] == "fallback"]
        self.graphs = [r["graph"] for r in compiled]
        self.graph_count = len(compiled)
        breaks = [r for r in compiled if r.get("break_reason")]
        self.graph_break_count = len(fallbacks) + len(breaks)
        self.break_reasons = [f"{r['name']} ({r['filename']}:{r['firstlineno']}): {r['reason']}"
                              for r in fallbacks]
        self.break_reasons += [f"{r['name']} ({r['filename']}:{r['firstlineno']}): graph break: "
                               f"{r['break_reason']}" for r in breaks]
        self.op_count = sum(r["op_count"] for r in compiled)
        # matmul/conv: extern (ATen) nodes inside graphs, and splits (ATen kernels between
        # graphs, e.g. where an operand requires grad) — neither is a graph break
        # "%5 = extern %0 %1 conv params=[..] beta=..": the name follows the operands
        self.extern_calls = [next(w for w in ln.split(" = extern ")[1].split() if not w.startswith("%"))
                             for r in compiled
                             for ln in (r.get("graph") or "").splitlines() if " = extern " in ln]
        self.extern_calls += [r["extern_call"] for r in compiled if r.get("extern_call")]
        self.guards = [g for r in compiled for g in r["guards"]]
        self.kernels = [r["kernels"] for r in compiled if r.get("kernels")]
        self.compile_ms = sum(r.get("compile_ms", 0.0) for r in records if r["event"] != "hit")
        # compiles on this call per code object, "name (file:line)" -> count (resume functions
        # count under the function they continue)
        self.compiles_per_code = {}
        for r in records:
            if r["event"] == "compiled":
                k = f"{r['name']} ({r['filename']}:{r['firstlineno']})"
                self.compiles_per_code[k] = self.compiles_per_code.get(k, 0) + 1

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}",
                 f"Extern Calls (matmul/conv, ATen): {len(self.extern_calls)}"]
        if self.compiles_per_code:
            lines.append("Compiles per code object:")
            lines += [f"  {n}: {k}" for k, n in sorted(self.compiles_per_code.items(), key=lambda kv: -kv[1])]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines += [f"  {i + 1}. {r}" for i, r in enumerate(self.break_reasons)]
        for i, g in enumerate(self.graphs):
            lines.append(f"Graph {i}:")
            lines += ["  " + ln for ln in g.splitlines()]
        if self.guards:
            lines.append("Guards:")
            lines += [f"  {g}" for g in self.guards]
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, **compile_kwargs):
    """torchc.explain(fn)(*args) -> ExplainOutput: graphs, breaks and their reasons, guards."""
    target = fn
    if isinstance(fn, OptimizedModule):
        call = fn._torchc_call
    elif isinstance(fn, (_C.CompiledFunction, _cudagraphs.CUDAGraphed)):
        call = fn
    else:
        call = compile(target, **compile_kwargs)

    def run(*args, **kwargs):
        cg = call if isinstance(call, _cudagraphs.CUDAGraphed) else None
        n0 = cg.nevents if cg else 0
        _C.explain_start()
        try:
            result = call(*args, **kwargs)
        finally:
            records = _C.explain_stop()
        events = cg.events[len(cg.events) - min(cg.nevents - n0, len(cg.events)):] if cg else ()
        if cg and not events:
            events = [{"event": "replayed", "reason": None}]
        return ExplainOutput(records, result, events)

    return run
