"""The thin Python API over torchc._C: compile(), explain(), reset(), disable(), config."""
import functools
import re
import types

import torch

from . import _C
from . import _cudagraphs
from . import _torch


from ._config import automatic_dynamic, config  # noqa: F401  (torchc.config: ic_config.h's table)

_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# options= torchc understands: name -> (meaning, type)
OPTIONS = {
    "triton.cudagraphs": ("CUDA graphs for the compiled calls (what mode='reduce-overhead' sets)", bool),
    "cudagraph_adaptive": ("reduce-overhead: stop replaying a key whose normal call is faster "
                           "(default True)", bool),
    "max_autotune": ("what mode='max-autotune' sets: conv layouts and CUDA GEMMs (template vs "
                     "cuBLASLt) chosen by timing", bool),
}


class CompileArgumentError(ValueError, RuntimeError):
    """A bad mode=, options= or backend= of torchc.compile. torch.compile raises RuntimeError
    for these (InvalidBackend, "Unrecognized mode", "Unexpected optimization option"): code
    written for it catches RuntimeError, code written for torchc ValueError; both work."""


def _other_backend(backend):
    """None for torchc's own compiler (backend None, "inductor", "torchc"); else the backend
    torchc's captured graphs go to as FX GraphModules (torchc/_fx_export.py): a callable
    taking (gm, example_inputs), or a name in Dynamo's registry ("eager", "aot_eager", ...)."""
    if backend in (None, "inductor", "torchc"):
        return None
    if isinstance(backend, str):
        from torch._dynamo.backends.registry import list_backends, lookup_backend
        try:
            lookup_backend(backend)
        except Exception:
            raise CompileArgumentError(f"torchc.compile: unknown backend {backend!r}; valid: 'inductor' or "
                             "'torchc' (torchc's compiler), a callable (gm, example_inputs), or one "
                             f"of Dynamo's: {', '.join(['eager', 'aot_eager'] + list_backends())}") from None
        return backend
    if callable(backend):
        return backend
    raise TypeError(f"torchc.compile: backend must be a str or a callable, got {backend!r}")


def _check_options(backend, mode, options):
    """torch.compile's arguments: accepted with their meaning, or a clear error."""
    if _other_backend(backend) is not None and (mode is not None or options):
        raise CompileArgumentError(f"torchc.compile: mode= and options= are torchc's compiler's; backend="
                         f"{backend!r} compiles the graphs itself and takes neither")
    if mode is not None and mode not in _MODES:
        raise CompileArgumentError(f"torchc.compile: unknown mode {mode!r}; valid modes: {', '.join(_MODES)}")
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"torchc.compile: options must be a dict, got {type(options).__name__}")
    if mode is not None and set(options) - {"cudagraph_adaptive"}:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified "
                           "at the same time.")  # torch.compile's rule
    for k, v in options.items():
        if k not in OPTIONS:
            valid = "; ".join(f"{n!r} ({m})" for n, (m, _) in OPTIONS.items())
            raise CompileArgumentError(f"torchc.compile: unknown option {k!r} (torchc has no equivalent of it); "
                             f"valid options: {valid}")
        if not isinstance(v, OPTIONS[k][1]):
            raise TypeError(f"torchc.compile: option {k!r} must be a {OPTIONS[k][1].__name__}, got {v!r}")
    return dict(options)


_autotune_warned = False


def _mode_flags(mode, options):
    """(CUDA graphs?, adaptive?, autotune?) for mode/options. mode='max-autotune' is
    reduce-overhead's CUDA graphs plus autotuning (torchc/_autotune.py): each 2-d convolution's
    layout (NCHW or channels-last) is chosen by timing ATen's kernel both ways at capture, on
    any device; on CUDA every GEMM torchc's template can compute is timed at its first call
    against the extern (cuBLASLt) call, and the faster runs from then on (the default mode
    times only GEMMs of 2^27..2^31 multiply-adds). CPU GEMMs run with ATen: nothing to
    choose (said once)."""
    global _autotune_warned
    cg = mode in ("reduce-overhead", "max-autotune") or options.get("triton.cudagraphs", False)
    tune = mode in ("max-autotune", "max-autotune-no-cudagraphs") or options.get("max_autotune", False)
    if tune and not _autotune_warned:
        _autotune_warned = True
        import logging
        logging.getLogger("torchc").warning(
            "torchc: mode='max-autotune' times each 2-d convolution in NCHW and channels-last at "
            "capture (the choices are logged on torchc.perf) and every CUDA GEMM (torchc's "
            "template vs cuBLASLt) at its first call; CPU matmuls run with ATen (no choice to "
            "time).")
    return bool(cg), bool(options.get("cudagraph_adaptive", True)), bool(tune)


def _rebuild_module(mod, kwargs):
    """Unpickling / deep copy of an OptimizedModule: compile the (copied) module again; the
    code is compiled lazily at its first call."""
    return compile(mod, **kwargs)


class OptimizedModule(torch.nn.Module):
    """What torchc.compile(module) returns: forwards to the original module, with its
    forward frames captured by torchc. Parameters are shared with the original; state_dict
    keys carry the "_orig_mod." prefix, as torch.compile's."""

    def __init__(self, mod, compiled_call, compile_kwargs=None):
        super().__init__()
        self._orig_mod = mod
        self._torchc_call = compiled_call
        self._torchc_kwargs = dict(compile_kwargs or {})

    def __reduce__(self):
        # pickle, copy.deepcopy, torch.save: the module and the compile arguments; compiled
        # code is never serialized (recompiled at the first call after loading)
        return (_rebuild_module, (self._orig_mod, self._torchc_kwargs))

    # attributes of the wrapper itself; every other one is the original module's (as
    # torch's OptimizedModule: cm.foo = 1 sets m.foo)
    _own = frozenset({"_orig_mod", "_torchc_call", "_torchc_kwargs", "forward", "__dict__"})

    def __setattr__(self, name, value):
        if name in OptimizedModule._own or hasattr(type(self), name) or "_orig_mod" not in self.__dict__.get("_modules", ()):
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if name in OptimizedModule._own or hasattr(type(self), name):
            return super().__delattr__(name)
        return delattr(self._orig_mod, name)

    def __len__(self):
        return len(self._orig_mod)

    def __dir__(self):
        own = self._orig_mod.__dir__()
        return own + [a for a in super().__dir__() if a not in own]

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, value):
        # nn.Module.__init__ sets training before _orig_mod exists
        if "_modules" in self.__dict__ and "_orig_mod" in self._modules:
            self._orig_mod.training = value

    def forward(self, *args, **kwargs):
        return self._torchc_call(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "_orig_mod":
                raise
            return getattr(self._orig_mod, name)


def _dynamic_flag(dynamic):
    """torch.compile's dynamic: None = automatic (a dim that changes is made dynamic),
    False = always specialize, True = every dim of the tensor arguments symbolic.
    torch._dynamo.mark_dynamic / mark_static on an argument win over these (dynamo_hook/marks.c)."""
    if dynamic is None:
        return -1 if automatic_dynamic() else 0
    if not isinstance(dynamic, bool):
        raise TypeError(f"dynamic must be None, True or False, got {dynamic!r}")
    return int(dynamic)


def compile(model=None, *example_inputs, fullgraph=False, dynamic=None, backend="inductor",
            mode=None, options=None, name=None, disable=False, recompile_limit=None,
            isolate_recompiles=False, shapes_spec=None):
    """torch.compile's signature and meaning. Returns a compiled function or an
    OptimizedModule. backend: "inductor" (torch.compile's default) or "torchc" both mean
    torchc's C inductor; another backend — "eager", "aot_eager", any name in Dynamo's registry,
    or a callable taking (gm, example_inputs) like torch.compile's — gets each graph torchc
    captures as a torch.fx.GraphModule and what it returns runs in place of torchc's code
    (guards, graph breaks and their resume functions stay torchc's; a graph with symbolic
    shapes goes over as Dynamo's do: sizes computed from the inputs in the graph, fake
    example inputs of symbolic sizes under Dynamo's tracing context). recompile_limit: entries
    per code object before running eagerly (None: torchc.config.recompile_limit, which
    follows torch._dynamo.config.recompile_limit until set). name: kept as the result's
    compile_name (torch surfaces it in debug metadata only)."""
    if example_inputs:
        # torch.compile(m, backend=torchc.compile): Dynamo calls compile(gm, example_inputs)
        from torch.fx import GraphModule
        if len(example_inputs) != 1 or not isinstance(model, GraphModule):
            raise TypeError("torchc.compile takes one positional argument (the function or module)")
        from ._backend import torchc_backend
        return torchc_backend(model, example_inputs[0])
    from ._config import check_env
    check_env()  # a TORCHC_* value that does not parse: warned once
    kwargs = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                  options=options, name=name, disable=disable, recompile_limit=recompile_limit)
    opts = _check_options(backend, mode, options)
    fullgraph = bool(fullgraph)  # torch.compile takes any truthy value
    if name is not None and not isinstance(name, str):
        raise TypeError(f"torchc.compile: name must be a str or None, got {name!r}")
    if recompile_limit is not None and (not isinstance(recompile_limit, int) or
                                        isinstance(recompile_limit, bool) or recompile_limit < 1):
        raise ValueError(f"torchc.compile: recompile_limit must be a positive int or None, "
                         f"got {recompile_limit!r}")
    if isolate_recompiles:
        raise NotImplementedError("torchc.compile: isolate_recompiles=True is not supported "
                                  "(recompiles are counted per code object)")
    if shapes_spec is not None:
        raise NotImplementedError("torchc.compile: shapes_spec is not supported; use "
                                  "torch._dynamo.mark_dynamic / mark_static on the arguments")
    if model is None:
        return lambda m: compile(m, **kwargs)
    dyn = _dynamic_flag(dynamic)
    other = _other_backend(backend)
    if disable:
        return model
    cg, adaptive, tune = _mode_flags(mode, opts)
    limit = recompile_limit or 0
    if isinstance(model, torch.nn.Module):
        # a ScriptModule's class has no Python forward (torch.jit): it runs as TorchScript
        fwd = getattr(getattr(type(model), "forward", None), "__code__", None)
        if fwd is not None:  # torch's own modules live in skipped files: capture their forward
            _C.allow_code(fwd)
        call = _C.CompiledFunction(model, fullgraph, dyn, limit)
        call.autotune = int(tune)
        if other is not None:
            call.backend = other
        if name is not None:
            call.compile_name = name
        if cg and fwd is not None:
            call = _cudagraphs.CUDAGraphed(call, type(model).forward, (model,), module=model,
                                           adaptive=adaptive)
        return OptimizedModule(model, call, kwargs)
    if not callable(model):
        raise TypeError(f"torchc.compile expects a callable or nn.Module, got {type(model).__name__}")
    cf = _C.CompiledFunction(model, fullgraph, dyn, limit)
    cf.autotune = int(tune)
    if other is not None:
        cf.backend = other
    try:
        functools.update_wrapper(cf, model)
    except (AttributeError, TypeError):
        pass
    # torch unwraps compiled functions through this attribute (torch._dynamo.eval_frame.
    # innermost_fn): torch.compiler.disable(cf) disables the original, torch.compile(cf)
    # compiles it (the id ties the attribute to this object, not to a functools.wraps copy)
    cf._torchdynamo_orig_callable = model
    cf._torchdynamo_wrapper_id = id(cf)
    if name is not None:
        cf.compile_name = name
    if cg:
        if isinstance(model, types.MethodType):
            cf = _cudagraphs.CUDAGraphed(cf, model.__func__, (model.__self__,), adaptive=adaptive)
        elif isinstance(model, types.FunctionType):
            cf = _cudagraphs.CUDAGraphed(cf, model, adaptive=adaptive)
        try:
            functools.update_wrapper(cf, model)
        except (AttributeError, TypeError):
            pass
        cf._torchdynamo_orig_callable = model
        cf._torchdynamo_wrapper_id = id(cf)
    return cf


def _cf_reduce(self):
    """pickle a compiled function as torch's pickle: by reference to its module-level name
    (works for `@torchc.compile def f`, fails like any function for a local one or when the
    name holds the original function); the compiled code is never serialized"""
    name = getattr(self, "__qualname__", None)
    if not isinstance(name, str):
        raise TypeError(f"cannot pickle {type(self).__name__!r} object (no __qualname__)")
    return name


# copy.copy / copy.deepcopy of a compiled function give the same object (as for functions
# and torch.compile's compiled functions); pickling is by name, as a function's
_C.CompiledFunction.__copy__ = lambda self: self
_C.CompiledFunction.__deepcopy__ = lambda self, memo: self
_C.CompiledFunction.__reduce__ = _cf_reduce


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
    """Forget every compiled graph (like torch._dynamo.reset(); torch.compiler.reset() calls
    this too once torchc is imported)."""
    _C.reset()
    _C._scan_persist_clear()  # torchc.scan's kept persistent CUDA kernels (inductor_c/codegen/gpu_scan.c)
    _cudagraphs.reset_all()
    from . import _autotune
    _autotune.reset()


def _made_function(code, globals, nclosure, ndefs=-1, kwdefaults=False, annotations=False, real=()):
    """A function made in a traced frame, built for real where it leaves the trace, as
    CPython's MAKE_FUNCTION builds it (dynamo_hook/sym_output.c made_function,
    made_comprehension): called with (closure values..., defaults..., [keyword-only defaults
    dict], [annotations tuple (name, value, ...)]); ndefs -1: every value after the closure
    is a default. real[k] true: closure value k is a cell object already (a free variable of
    the traced function: eager's nested function shares that cell)."""
    import types

    def make(values):
        cells = tuple(v if k < len(real) and real[k] else types.CellType(v)
                      for k, v in enumerate(values[:nclosure]))
        end = len(values) if ndefs < 0 else nclosure + ndefs
        f = types.FunctionType(code, globals, code.co_name, tuple(values[nclosure:end]) or None, cells or None)
        f.__qualname__ = code.co_qualname
        if kwdefaults:
            f.__kwdefaults__ = values[end]
            end += 1
        if annotations:
            ann = values[end]
            f.__annotations__ = dict(zip(ann[::2], ann[1::2]))
        return f
    return make


def _deepcopy_written(writes, root_dict):
    """copy.deepcopy of an object graph that the traced code changed before copying it,
    hoisted to the guards (dynamo_hook/obj_new.c hoisted_copy): the graph as it was before the
    call is copied, then the trace's writes are made on the copy. writes: (path, name,
    deleted, value) in program order; path the attribute names from the copied object to the
    object written (root_dict: the copied object is a dict, path[0] one of its keys, and an
    empty path sets its item); value an atomic constant, which deepcopy returns as it is."""
    import copy

    def make(orig):
        targets = []
        for path, _name, _deleted, _value in writes:
            o = orig
            for i, p in enumerate(path):
                o = o[p] if root_dict and i == 0 else object.__getattribute__(o, "__dict__")[p]
            targets.append(o)
        memo = {}
        c = copy.deepcopy(orig, memo)
        for (path, name, deleted, value), o in zip(writes, targets):
            t = c if o is orig else memo[id(o)]
            if root_dict and not path:
                if deleted:
                    del t[name]
                else:
                    t[name] = value
            elif deleted:
                object.__delattr__(t, name)
            else:
                object.__setattr__(t, name, value)
        return c
    return make


def _enclosing_duplicates(records):
    """ids of the break/fallback records that an enclosing frame made for a break a deeper
    frame of the same call recorded again later: same reason, and the later record's
    `where` (innermost first, "file:line in fn; ...") is a proper prefix of this one's."""
    def reason(r):
        if r["event"] == "fallback":
            return r.get("reason")
        if r["event"] in ("compiled", "hit") and not r.get("fallback"):
            return r.get("break_reason")
        return None

    rows = [(r, reason(r), r.get("where") or "") for r in records]
    dup, used = set(), set()
    for i, (r, why, where) in enumerate(rows):
        if not why or "; " not in where:
            continue  # not a break inside a called function
        for j in range(i + 1, len(rows)):
            s, swhy, swhere = rows[j]
            if j in used or swhy != why or not swhere:
                continue
            if where.startswith(swhere + "; ") or (len(swhere) >= 400 and where.startswith(swhere) and swhere != where):
                dup.add(id(r))
                used.add(j)
                break
    return dup


_VAL = re.compile(r"%\d+")
# a reason that names a limit: the recompile limit, a trace limit of torchc.config
_LIMIT = re.compile(r"recompile limit \(|torchc\.config\.(max_\w+|inline_depth|rnn_unroll_steps|adaptive_windows)")


def _live_ops(text):
    """Ops of a graph's text that its outputs read (inputs and scalars not counted)."""
    deps, kinds, live = {}, {}, []
    for ln in text.splitlines():
        if ln.startswith("%") and " = " in ln:
            name, rhs = ln.split(" = ", 1)
            kinds[name] = rhs.split(" ", 1)[0]
            deps[name] = _VAL.findall(rhs)
        elif ln.startswith("output ") and " = " in ln:
            live += _VAL.findall(ln.split(" = ", 1)[1])
    seen = set()
    while live:
        v = live.pop()
        if v not in seen:
            seen.add(v)
            live += deps.get(v, ())
    return sum(kinds.get(v) not in (None, "input", "scalar") for v in seen)


def _piece_ops(rec):
    """The tensor ops a captured piece counts for, as Dynamo's graphs count calls. A piece
    that broke inside a function it inlined keeps the ops it traced in that callee, dead:
    the callee then runs as its own frame with them; those are not the piece's. Otherwise
    its ops, and one where it traced a call whose result needs no kernel (torch.ones(3)
    folded into a constant, a view replayed on an input): Dynamo has a graph there too."""
    text = rec.get("graph") or ""
    if rec.get("break_reason") and "; " in (rec.get("where") or ""):
        return _live_ops(text)
    if rec["op_count"]:
        return rec["op_count"]
    return int(any(" = input " not in ln for ln in text.splitlines() if ln.startswith("%")))


def _has_ops(rec):
    """Whether a captured piece is a graph as Dynamo counts them: tensor ops, or an extern
    kernel it split at (an ATen matmul/conv between two pieces of one graph)."""
    return bool(rec.get("extern_call") or _piece_ops(rec))


class ExplainOutput:
    """What torchc.explain(fn)(*args) returns."""

    def __init__(self, records, result, cudagraphs=(), internal_faults=0, last_internal_fault=None):
        self.records = records
        self.result = result
        self.scan_lowerings = []  # set by explain's run: torchc.scan's lowering per call
        # compiler bugs during this call (IC_EINTERNAL: the frame ran eagerly); the suite
        # fails a test that has any unless it is marked allow_internal_fault (tests/conftest.py)
        self.internal_faults = internal_faults
        self.last_internal_fault = last_internal_fault if internal_faults else None
        # mode="reduce-overhead": what the CUDA graph layer did on this call
        # ({"event": warmup|captured|replayed|fallback, "reason": str or None})
        self.cudagraphs = list(cudagraphs)
        # Counted as torch._dynamo.explain counts (torch/_dynamo/eval_frame.py explain): a graph
        # is one that compiled or ran during this call, counted once however often it ran (a
        # cache hit is Dynamo's compile-once), and only with tensor ops in it (a frame or
        # resume piece with none gives Dynamo no graph). Pieces split at an extern kernel (an
        # ATen matmul/conv between them, not a break) are one graph. Dynamo's break count is
        # graph_count - 1; torchc adds the frames that ran eagerly, whose ops are in no graph,
        # so one graph and no break still means the call was captured whole.
        pieces = [r for r in records if r["event"] in ("compiled", "hit") and not r.get("fallback")]
        chains, chain, split = {}, [], False
        for r in records:
            if r["event"] in ("compiled", "hit") and not r.get("fallback"):
                if chain and not split:
                    chains.setdefault(tuple(p["entry"] for p in chain), chain)
                    chain = []
                chain.append(r)
                split = bool(r.get("extern_call"))
            else:
                split = False
        if chain:
            chains.setdefault(tuple(p["entry"] for p in chain), chain)
        every = list(chains.values())
        chains = [c for c in every if any(map(_has_ops, c))]
        graphs = {id(c) for c in chains}
        compiled = [p for c in chains for p in c]  # the distinct pieces of the graphs
        self.graph_count = len(chains)
        self.graphs = [r["graph"] for r in compiled if _has_ops(r)]
        # frames run eagerly (a failed capture, the recompile limit): once per function and reason
        seen, fallbacks = set(), []
        for r in records:
            if r["event"] == "fallback" and (r["code"], r.get("reason")) not in seen:
                seen.add((r["code"], r.get("reason")))
                fallbacks.append(r)
        self.graph_break_count = max(self.graph_count - 1, 0) + len(fallbacks)
        # "fn (file:line of the unsupported code): reason" (resume functions named after
        # the function they continue; the line is the def line when torchc has no better
        # one): as Dynamo's, one per graph that a break ended, and one per frame run eagerly.
        # Unlike Dynamo's, a break that ended a piece with no op is listed too (torch.relu_(x)
        # left to eager as the first instruction: nothing else says why), unless a callee it
        # was inside ran as its own frame later in the call and recorded it there.
        from ._logging import user_loc, user_name, where_of
        inner = _enclosing_duplicates(records)
        self.break_reasons = [f"{user_name(r['name'])} ({where_of(r)}): {r['reason']}"
                              for r in fallbacks]
        self.break_reasons += [f"{user_name(c[-1]['name'])} ({where_of(c[-1])}): graph break: "
                               f"{c[-1]['break_reason']}" for c in every if c[-1].get("break_reason") and
                               (id(c) in graphs or id(c[-1]) not in inner)]
        self.eager_frames = [f"{user_name(r['name'])} ({user_loc(r)}): {r['reason']}" for r in fallbacks]
        # what Dynamo's counts leave out: every piece that ran (cache hits, pieces without
        # tensor ops included), the runs answered by an entry compiled before, the empty pieces
        self.pieces_run = len(pieces)
        self.cache_hits = sum(r["event"] == "hit" for r in records)
        self.empty_pieces = len({r["entry"] for r in pieces if not _has_ops(r)})
        # the limits this call reached (the recompile limit, torchc.config's trace limits)
        self.limits_hit = sorted({r for r in self.break_reasons if _LIMIT.search(r)})
        self.op_count = sum(_piece_ops(r) for r in compiled)
        # matmul/conv: extern (ATen) nodes inside graphs, and splits (ATen kernels between
        # graphs, e.g. where an operand requires grad) — neither is a graph break
        # "%5 = extern %0 %1 conv params=[..] beta=..": the name follows the operands
        self.extern_calls = [next(w for w in ln.split(" = extern ")[1].split() if not w.startswith("%"))
                             for r in compiled
                             for ln in (r.get("graph") or "").splitlines() if " = extern " in ln]
        self.extern_calls += [r["extern_call"] for r in compiled if r.get("extern_call")]
        from ._logging import _local_names  # L[i] -> the local's name
        # the guards of every distinct piece, those without tensor ops too (they guard the call)
        distinct = list({r["entry"]: r for r in pieces}.values())
        self.guards = [_local_names(g, r.get("code")) for r in distinct for g in r["guards"]]
        self.kernels = [r["kernels"] for r in compiled if r.get("kernels")]
        # what might make the compile cheaper: a long Python loop unrolled into a graph
        # (dynamo_hook/sym_output.c loop_hint), once per distinct hint
        self.hints = list(dict.fromkeys(r["hint"] for r in compiled if r.get("hint")))
        self.compile_ms = sum(r.get("compile_ms", 0.0) for r in records if r["event"] != "hit")
        # compile-time breakdown, seconds summed over this call's captures: capture,
        # cache_lookup, graph_passes, codegen (LLVM / NVPTX), load (JIT, cached code), fx_export
        from ._logging import STAGES
        self.compile_times = {k: sum((r.get("compile_times") or {}).get(k, 0.0) for r in records
                                     if r["event"] == "compiled") for k, _ in STAGES}
        # training (issue 22): backward graphs compiled for graphs whose inputs require grad,
        # and the bytes of forward values they keep (saved) for the backward
        self.backward_graphs = [r["backward_graph"] for r in compiled if r.get("backward_graph")]
        self.backward_graph_count = len(self.backward_graphs)
        self.backward_op_count = sum(r.get("backward_op_count", 0) for r in compiled)
        self.saved_bytes = sum(r.get("saved_bytes", 0) for r in compiled)
        # in-place updates of inputs (an optimizer's parameters and state): stored by the
        # kernels straight into the tensors, or computed apart and copied back after them
        self.inplace_updates = sum(r.get("inplace_updates", 0) for r in compiled)
        self.copied_updates = sum(r.get("copied_updates", 0) for r in compiled)
        # memory: the workspace bytes each graph's run allocates for its intermediates (extern
        # outputs, scratch); graphs run one at a time, so a call's peak above its inputs and
        # outputs is the largest (on the GPU each run takes its workspace from the allocator)
        self.planned_bytes_per_graph = [r.get("planned_bytes", 0) for r in compiled]
        self.planned_bytes = max(self.planned_bytes_per_graph, default=0)
        self.config = _C.config_changed()  # settings not at their default: "name=value (source)" lines
        # compiles on this call per code object, "name (file:line)" -> count (resume functions
        # count under the function they continue)
        self.compiles_per_code = {}
        for r in records:
            if r["event"] == "compiled":
                k = f"{user_name(r['name'])} ({user_loc(r)})"
                self.compiles_per_code[k] = self.compiles_per_code.get(k, 0) + 1

    def gpu_planned_bytes(self, sm=90):
        """The largest workspace a CUDA compilation of these graphs (sm_XY as XY) would allocate
        per run, computed without a GPU (ic_graph_gpu_workspace_bytes: the PTX-only compilation);
        None when a graph does not compile for the GPU."""
        import ctypes
        lib = ctypes.CDLL(_C.__file__)
        lib.ic_graph_parse.restype = ctypes.c_void_p
        lib.ic_graph_parse.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.ic_graph_free.argtypes = [ctypes.c_void_p]
        lib.ic_graph_gpu_workspace_bytes.restype = ctypes.c_int64
        lib.ic_graph_gpu_workspace_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        err = ctypes.create_string_buffer(4096)  # an ic_err (code + message) fits
        best = 0
        for text in self.graphs:
            g = lib.ic_graph_parse(text.encode(), err, 256)
            if not g:
                return None
            try:
                n = lib.ic_graph_gpu_workspace_bytes(g, sm, err)
            finally:
                lib.ic_graph_free(g)
            if n < 0:
                return None
            best = max(best, n)
        return best

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}",
                 f"Extern Calls (matmul/conv, ATen): {len(self.extern_calls)}"]
        if self.internal_faults:
            lines.append(f"Internal Faults: {self.internal_faults} (last: {self.last_internal_fault})")
        if self.backward_graph_count:
            lines += [f"Backward Graph Count: {self.backward_graph_count}",
                      f"Backward Op Count: {self.backward_op_count}",
                      f"Saved Bytes: {self.saved_bytes}"]
        if self.inplace_updates or self.copied_updates:
            lines.append(f"In-place Updates: {self.inplace_updates} stored by the kernels, "
                         f"{self.copied_updates} copied back")
        if self.planned_bytes:
            lines.append(f"Planned Bytes: {self.planned_bytes} (workspace of the largest graph)")
        if self.compile_ms:
            from ._logging import STAGES
            lines.append(f"Compile Time: {self.compile_ms / 1e3:.4f} s (" + ", ".join(
                f"{label} {self.compile_times[k]:.4f} s" for k, label in STAGES if self.compile_times[k]) + ")")
        if self.cache_hits or self.empty_pieces:
            lines.append(f"Pieces Run: {self.pieces_run} ({self.cache_hits} cache hits, "
                         f"{self.empty_pieces} without tensor ops; not graphs)")
        if self.limits_hit:
            lines.append("Limits Hit:")
            lines += [f"  {r}" for r in self.limits_hit]
        if self.compiles_per_code:
            lines.append("Compiles per code object:")
            lines += [f"  {n}: {k}" for k, n in sorted(self.compiles_per_code.items(), key=lambda kv: -kv[1])]
        if self.hints:
            lines.append("Hints:")
            lines += [f"  {h}" for h in self.hints]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines += [f"  {i + 1}. {r}" for i, r in enumerate(self.break_reasons)]
        for i, g in enumerate(self.graphs):
            lines.append(f"Graph {i}:")
            lines += ["  " + ln for ln in g.splitlines()]
        for i, g in enumerate(self.backward_graphs):
            lines.append(f"Backward Graph {i}:")
            lines += ["  " + ln for ln in g.splitlines()]
        if self.guards:
            lines.append("Guards:")
            lines += [f"  {g}" for g in self.guards]
        if self.config:
            lines.append("Config (not default):")
            lines += [f"  {c}" for c in self.config.splitlines()]
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
        f0 = _C.stats().get("internal_faults", 0)
        from . import _scan
        _C.explain_start()
        _scan._lowerings.lst = scans = []
        try:
            result = call(*args, **kwargs)
        finally:
            records = _C.explain_stop()
            _scan._lowerings.lst = None
        faults = _C.stats().get("internal_faults", 0) - f0
        events = cg.events[len(cg.events) - min(cg.nevents - n0, len(cg.events)):] if cg else ()
        if cg and not events:
            events = [{"event": "replayed", "reason": None}]
        out = ExplainOutput(records, result, events, faults, _C.last_internal_fault() if faults else None)
        # torchc.scan calls during this call: the lowering each got and why ("C loop: ...",
        # "persistent kernel: ..." on CUDA, "Python loop: <reason>")
        out.scan_lowerings = scans
        return out

    return run
