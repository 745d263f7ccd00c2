"""CUDA graphs for torchc.compile(..., mode="reduce-overhead").

A compiled call (torchc's kernels, ATen calls between graphs, graph breaks) is captured
once into a torch.cuda.CUDAGraph with static input buffers and replayed on later calls:

  key       the cache entry the call's frame takes (torchc._C.probe runs the frame's guards
            in C, so a guard failure or a recompile gives another key, hence a new
            capture) + the argument signature (tensor shapes/strides/dtypes/devices and
            aliasing, non-tensor values) + grad mode + (modules) the parameter/buffer
            pointers.
  warm-up   the first calls of a key run normally (the first compiles; cuModuleLoad and
            lazy ATen initialization are not allowed while a stream captures); their host
            time is measured; the next call captures.
  adaptive  a replay costs input copies + a graph launch (~15-20 µs of host time); a torchc
            call whose graph is a single fused kernel costs less. The first replays are timed
            too, and when a normal call was faster the key runs normally from then on (reason
            in explain). options={"cudagraph_adaptive": False} always replays.
  capture   tensor arguments are copied into static buffers, the call runs under
            torch.cuda.graph (its own private memory pool of PyTorch's caching allocator, so
            torchc's workspaces and every intermediate stay valid for replays), then the
            graph is replayed once to produce this call's results.
  replay    arguments are copied into the static buffers, graph.replay(); arguments the
            function updates in place are copied back.
  fallback  anything that cannot be replayed soundly runs normally, with the reason in
            torchc.explain(...).cudagraphs: no CUDA tensor argument, autograd, a capture
            failure (synchronizing ops such as .item(), CPU work), outputs aliasing
            arguments, a call the probe cannot bind (*args/**kwargs parameters).

Semantics, as torch's CUDA graphs: returned tensors are the graph's static outputs and are
overwritten by the next replay of the same graph; clone them to keep them. Guards of the
called frame are checked on every call; frames entered after a graph break are assumed to
take the same path (their inputs come from the captured frame). Python side effects of
the function (prints, list appends) happen at warm-up and capture only.
"""
import time
import warnings
import weakref

import torch

from . import _C

_live = weakref.WeakSet()  # every wrapper, for torchc.reset()


def reset_all():
    for w in list(_live):
        w.reset()


class _Unsupported(Exception):
    pass


def _flatten(obj, tensors, sig):
    """Appends obj's tensors to `tensors` and a hashable description to `sig`."""
    if isinstance(obj, torch.Tensor):
        tensors.append(obj)
        sig.append((obj.shape, obj.stride(), obj.dtype, obj.device, obj.requires_grad,
                    obj.storage_offset()))
    elif isinstance(obj, (tuple, list)):
        sig.append((type(obj), len(obj)))
        for v in obj:
            _flatten(v, tensors, sig)
    elif isinstance(obj, dict):
        sig.append((dict, tuple(obj.keys())))
        for v in obj.values():
            _flatten(v, tensors, sig)
    elif obj is None or isinstance(obj, (bool, int, float, str, torch.dtype, torch.device)):
        sig.append((type(obj), obj))
    else:
        try:
            hash(obj)
        except TypeError:
            raise _Unsupported(f"unhashable argument of type {type(obj).__name__}") from None
        sig.append((type(obj), id(obj)))


def _out_tensors(obj, acc):
    if isinstance(obj, torch.Tensor):
        acc.append(obj)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            _out_tensors(v, acc)
    elif isinstance(obj, dict):
        for v in obj.values():
            _out_tensors(v, acc)
    return acc


# torch's sync debug mode: what a synchronizing operation warns (c10/cuda warn_or_error_on_sync),
# and the warning its first set_sync_debug_mode() of the process gives (once, TORCH_WARN_ONCE:
# "Synchronization debug mode is a prototype feature and does not yet detect all synchronizing
# operations"). The second is not a synchronization: read as one, it marked the first key
# warmed in a process as never capturable (tests/test_cudagraphs.py never replayed on the H100).
_SYNC_TEXT = "called a synchronizing CUDA operation"
_PROTOTYPE_TEXT = "Synchronization debug mode is a prototype feature"


def _sync_warning(message):
    """"sync" for a synchronizing operation, "mode" for the warning setting the mode gives
    (torchc's own doing: dropped), None for anything else (passed on to the caller)."""
    text = str(message)
    if _SYNC_TEXT in text:
        return "sync"
    if _PROTOTYPE_TEXT in text:
        return "mode"
    return None


class _Graph:
    __slots__ = ("graph", "static", "outputs", "mutated", "replays", "normal_s", "replay_s")

    def __init__(self, graph, static, outputs, mutated):
        self.graph = graph
        self.static = static      # static input buffers, in argument order
        self.outputs = outputs    # what the captured call returned
        self.mutated = mutated    # indices of arguments updated in place
        self.replays = 0
        self.normal_s = float("inf")  # best host time of a normal call of this key
        self.replay_s = float("inf")  # best host time of the first replays


class CUDAGraphed:
    """The callable torchc.compile(fn, mode="reduce-overhead") returns (wrapped by an
    OptimizedModule for modules). `call` is the torchc CompiledFunction; `func`/`bound` are
    the function whose frame torchc captures and the leading arguments it gets (self)."""

    WARMUP = 2   # normal calls of a key before the capture (timed)
    PROBE = 3    # replays timed against them (adaptive)

    def __init__(self, call, func, bound=(), module=None, adaptive=True):
        self._adaptive = adaptive
        self._call = call
        self._func = func
        self._bound = tuple(bound)
        self._module = module
        self._graphs = {}     # key -> _Graph or a reason (str): run normally
        self._warm = {}       # key -> [normal calls seen, best normal seconds, reason not to capture]
        self.events = []      # explain records (bounded)
        self.nevents = 0      # events ever recorded
        _live.add(self)

    def reset(self):
        self._graphs.clear()
        self._warm.clear()
        self.events.clear()

    def _event(self, what, reason=None):
        if len(self.events) >= 64:
            del self.events[:32]
        self.events.append({"event": what, "reason": reason})
        self.nevents += 1

    def _normal(self, args, kwargs, reason=None):
        if reason is not None:
            self._event("fallback", reason)
        return self._call(*args, **kwargs)

    def _key(self, args, kwargs, tensors):
        sig = []
        _flatten(args, tensors, sig)
        if kwargs:
            _flatten(kwargs, tensors, sig)
        if not tensors:
            raise _Unsupported("no tensor arguments")
        dev = tensors[0].device
        if dev.type != "cuda" or any(t.device != dev for t in tensors):
            raise _Unsupported("arguments are not all on one CUDA device")
        grad = torch.is_grad_enabled()
        if grad and any(t.requires_grad for t in tensors):
            raise _Unsupported("autograd: an argument requires grad")
        ptrs = [t.data_ptr() for t in tensors]
        alias = tuple(ptrs.index(p) for p in ptrs)  # f(x, x) is another graph
        extra = ()
        if self._module is not None:
            st = [*self._module.parameters(), *self._module.buffers()]
            if grad and any(p.requires_grad for p in st):
                raise _Unsupported("autograd: a parameter requires grad (use torch.no_grad())")
            extra = tuple(p.data_ptr() for p in st)
        return (tuple(sig), alias, grad, extra)

    def __call__(self, *args, **kwargs):
        tensors = []
        try:
            key = self._key(args, kwargs, tensors)
        except _Unsupported as e:
            return self._normal(args, kwargs, str(e))
        # the entry this call would take under the CompiledFunction's own options (an entry
        # captured by another wrapper with other fullgraph/dynamic/backend never serves it)
        entry = _C.probe(self._func, self._bound + args, kwargs or None,
                         self._call if isinstance(self._call, _C.CompiledFunction) else None)
        if entry is None:  # not compiled yet, a guard fails (recompile), or unbindable
            self._event("warmup", "no compiled entry passes the guards yet")
            return self._call(*args, **kwargs)
        key = (entry, key)
        g = self._graphs.get(key)
        if g is None:
            w = self._warm.get(key)
            if w is None:
                w = self._warm[key] = [0, float("inf"), None]
            if w[0] < self.WARMUP:
                w[0] += 1
                self._event("warmup", None)
                return self._warm_call(w, args, kwargs)
            g = w[2] or self._capture(args, kwargs, tensors)
            self._graphs[key] = g
            if isinstance(g, str):
                return self._normal(args, kwargs, g)
            g.normal_s = w[1]
            self._event("captured", None)
        elif isinstance(g, str):  # decided earlier: runs normally (explain shows why)
            return self._normal(args, kwargs, g)
        if g.replays < self.PROBE and self._adaptive:
            t0 = time.perf_counter()
            out = self._replay(g, tensors)
            g.replay_s = min(g.replay_s, time.perf_counter() - t0)
            if g.replays == self.PROBE and g.replay_s > g.normal_s:
                self._graphs[key] = (f"a normal call is faster ({g.normal_s * 1e6:.1f} µs of host time) "
                                     f"than a replay ({g.replay_s * 1e6:.1f} µs)")
                self._event("fallback", self._graphs[key])
            return out
        return self._replay(g, tensors)

    def _warm_call(self, w, args, kwargs):
        """A normal call, timed, with torch's sync debug mode on: a call that synchronizes
        (.item(), .cpu(), nonzero, data-dependent branches) cannot be captured, and a failed
        capture would leave torch's CUDA generator in capture mode (its capture_end raises
        before the generator's epilogue), so such keys are never captured."""
        prev = torch.cuda.get_sync_debug_mode()
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                t0 = time.perf_counter()
                out = self._call(*args, **kwargs)
                w[1] = min(w[1], time.perf_counter() - t0)
            finally:
                torch.cuda.set_sync_debug_mode(prev)
        for r in rec:
            kind = _sync_warning(r.message)
            if kind == "sync":
                w[2] = "the call synchronizes with the device (e.g. .item(), .cpu(), a data-dependent branch)"
            elif kind is None:  # not ours: pass it on
                warnings.warn_explicit(r.message, r.category, r.filename, r.lineno)
        return out

    def _replay(self, g, tensors):
        if len(tensors) > 1:
            torch._foreach_copy_(g.static, tensors)  # one multi-tensor launch
        else:
            g.static[0].copy_(tensors[0])
        g.graph.replay()
        for i in g.mutated:
            tensors[i].copy_(g.static[i])
        g.replays += 1
        return g.outputs

    def _capture(self, args, kwargs, tensors):
        """A _Graph, or the reason (str) why this key runs normally."""
        static = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
                  for t in tensors]
        for s, t in zip(static, tensors):
            s.copy_(t)
        it = iter(static)

        def swap(obj):
            if isinstance(obj, torch.Tensor):
                return next(it)
            if isinstance(obj, (tuple, list)):
                return type(obj)(swap(v) for v in obj)
            if isinstance(obj, dict):
                return {k: swap(v) for k, v in obj.items()}
            return obj

        sargs = swap(args)
        skw = swap(kwargs) if kwargs else {}
        before = _C.stats()
        versions = [s._version for s in static]
        graph = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
        _C.set_cudagraph_capture(True)  # guards on is_current_stream_capturing(): as normal
        try:
            with torch.cuda.graph(graph):
                out = self._call(*sargs, **skw)
        except Exception as e:  # capture failed: the call runs normally from now on
            torch.cuda.synchronize()
            return f"CUDA graph capture failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        finally:
            _C.set_cudagraph_capture(False)
        after = _C.stats()
        if after["compiles"] != before["compiles"] or after["fallbacks"] != before["fallbacks"]:
            return "compiled during capture (frames after a graph break differ between calls)"
        outs = _out_tensors(out, [])
        sptrs = {s.untyped_storage().data_ptr() for s in static}
        for o in outs:
            if o.untyped_storage().data_ptr() in sptrs:
                return "an output aliases an argument"
            if o.requires_grad:
                return "autograd: an output requires grad"
        mutated = [i for i, s in enumerate(static) if s._version != versions[i]]
        g = _Graph(graph, static, out, mutated)
        return g
