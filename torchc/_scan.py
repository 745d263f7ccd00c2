"""torchc.scan(combine_fn, init, xs): a recurrence compiled once and run as a loop in C.

Semantics are torch's scan higher-order op (torch._higher_order_ops.scan.scan): combine_fn
(carry, x) -> (next_carry, y) over slices of xs along `dim`; returns (final carry, ys stacked
along `dim`), carry/x/y pytrees of tensors; `reverse=True` scans from the end. Unlike torch's
op, combine_fn may read tensors from its closure or module (parameters); their gradients are
computed too.

How it runs (no Python and no capture per step; compile time does not depend on the length):
  1. probe: the torchc-compiled combine_fn runs step 0 with a probe set (csrc/scan.c); the
     entry that ran (its compiled graph, the tensors bound to its inputs, its outputs and,
     in training, its compiled backward) is recorded. Graph inputs are classified by
     identity: the carry, the x slice, or loop constants (closure/parameters).
  2. forward: _C._scan_loop runs the compiled forward graph for steps 1 .. T-1 in C, reading
     x_t from xs in place and writing carries / ys / the values the backward needs into
     stacked buffers (one row per step).
  3. backward (a torch.autograd.Function): _C._scan_loop runs the compiled backward graph
     for steps T-1 .. 0 (backpropagation through time): the carry gradient ping-pongs
     between two buffers, ys' gradients are read per step, the constants' gradients are
     summed in place.
  Buffers: a carry that is also a result shares one [T+1] buffer with it; stacked buffers come
  from a pool and are reused by later calls once nothing holds them (see _empty); the ones the
  backward reads are saved through save_for_backward, so the engine frees them after it.
On CUDA, a forward scan (no gradient needed) whose body is a product of the carry with a
constant plus pointwise ops runs as one persistent kernel generated in C from the body's
graph (inductor_c/codegen/gpu_scan.c); `last_lowering` (and torchc.explain(...).scan_lowerings)
names the lowering a scan got and why.
Where the body cannot run as such a loop (a graph break, mutation of inputs, a result that
is not a graph output, CUDA in training or a body the persistent kernel does not take, dtypes
other than float32/float64 for the summed gradients, no compiled graph at all), the scan
runs a Python loop over the compiled body (still compiled once) and says why in `torchc._scan.last_fallback` and the `torchc.scan` logger. That loop
goes on from the probe's step 0 (its result attached to the caller's carries and x slices
for the gradient, _Reattach), so step 0's side effects — an in-place update of a buffer, a
carry or x slice, Python state written after a graph break — happen once, as in eager.
"""
import functools
import logging
import sys
import threading
import weakref

import math
import torch
from torch.utils import _pytree as pytree

from . import _C

__all__ = ["scan"]

_FWD_INPUT, _FWD_OUTPUT, _GRAD_OUT, _GRAD_CAME = 0, 1, 2, 3
_ADD_DT = {torch.float32: 0, torch.float64: 1}
log = logging.getLogger("torchc.scan")
last_fallback = None   # the reason the last scan ran a Python loop (None: it ran in C)
# which lowering the last scan got and why: "C loop: ...", "persistent kernel: ..." (CUDA,
# inductor_c/codegen/gpu_scan.c) or "Python loop: <reason>"; also appended to _lowerings.lst
# while torchc.explain runs (ExplainOutput.scan_lowerings)
last_lowering = None
_lowerings = threading.local()
_CUDA_WHY = "the C loop runs CPU graphs only"
_bodies = weakref.WeakKeyDictionary()
_bodies_static = weakref.WeakKeyDictionary()


def _note(what):
    global last_lowering
    last_lowering = what
    lst = getattr(_lowerings, "lst", None)
    if lst is not None:
        lst.append(what)


class NotPersistent(Exception):
    """persistent_plan: the body gets no persistent kernel (the reason)."""


class Persistent:
    """A persistent scan kernel (the C object) and its launch shape: N, n, threads, R, ctas,
    np, smem, has_mv, w_smem, nxmm (input projections), nres (result stacks)."""

    def __init__(self, cap):
        self.cap = cap
        info = _C._scan_persist_info(cap)
        self._describe = info.pop("describe")
        self.__dict__.update(info)

    def describe(self):
        return self._describe

    @property
    def ir(self):
        return _C._scan_persist_ir(self.cap)

    def ptx(self):
        """its PTX, for the sm persistent_plan (or the device) gave"""
        return _C._scan_persist_ptx(self.cap)



def _dense_meta(meta):
    """meta = (sizes, strides, dtype) of a compiled output: row-major contiguous?"""
    sizes, strides = meta[0], meta[1]
    st = 1
    for n, s in zip(reversed(sizes), reversed(strides)):
        if n != 1 and s != st:
            return False
        st *= n
    return True


def _dense_perm(meta):
    """meta's strides are a permutation of a dense layout (no gaps, no overlap)"""
    dims = sorted((s, n) for n, s in zip(meta[0], meta[1]) if n != 1)
    st = 1
    for s, n in dims:
        if s != st:
            return False
        st *= n
    return True

# Stacked buffers ([T, ...] carries, results, saved activations, gradients) are kept between
# calls and reused once nothing else holds them: no Python reference but the pool's, no other
# tensor on the storage (a view, an alias, a tensor autograd saved) and no C++ reference to the
# tensor itself. Fresh buffers of this size come from mmap and each call paid their page faults
# (a tenth of an expRNN training step's samples in perf were the kernel's page clearing).
# At most _POOL_PER_KEY buffers of one (shape, strides, dtype), _POOL_BYTES in all (the least
# recently used keys dropped first); clear_buffers() empties it.
_pool = {}
_pool_lock = threading.Lock()
_POOL_PER_KEY = 3
_POOL_BYTES = 1 << 30


def clear_buffers():
    """Drops the stacked buffers torchc.scan keeps for reuse between calls."""
    with _pool_lock:
        _pool.clear()


def _empty(shape, dtype, strides=None):
    with _pool_lock:  # (threads calling scan at once share the pool)
        key = (shape, strides, dtype)
        lst = _pool.pop(key, None)
        if lst is not None:
            _pool[key] = lst  # most recently used last
            for t in lst:
                # unused: no reference but the pool's list, t and getrefcount's argument, no
                # other tensor on the storage. Checked inline, not through a Python call: while
                # a compiled caller's graph break runs, calls pass through torchc's frame
                # hook, and a hooked call held extra references to its argument, so every
                # pooled buffer looked held (a compiled model allocated fresh [T, N, n]
                # stacks each step: its forward 0.14 s against 0.076 s CPU at L = 784, n = 170)
                if (sys.getrefcount(t) <= 3 and t._use_count() == 1 and
                        torch._C._storage_Use_Count(t.untyped_storage()._cdata) <= 2):
                    return t
        out = torch.empty(shape, dtype=dtype) if strides is None else \
            torch.empty_strided(shape, strides, dtype=dtype)
        if lst is None:
            lst = _pool[key] = []
        if len(lst) < _POOL_PER_KEY:
            lst.append(out)
            total = sum(t.untyped_storage().nbytes() for v in _pool.values() for t in v)
            while total > _POOL_BYTES and len(_pool) > 1:
                old = next(iter(_pool))
                total -= sum(t.untyped_storage().nbytes() for t in _pool.pop(old))
        return out


def _rows_alias(b, start, n):
    """Rows start .. start + n of b as a tensor of its own on b's storage (no view)."""
    return torch.empty(0, dtype=b.dtype).set_(b.untyped_storage(), b.storage_offset() + start * b.stride(0),
                                              (n,) + tuple(b.shape[1:]), b.stride())


def _complex_hint(fn, c0, X):
    """Why a body usually has no graph: a complex carry, input or closure tensor."""
    seen = list(c0) + list(X)
    while isinstance(fn, functools.partial):
        seen += list(fn.args) + list(fn.keywords.values())
        fn = fn.func
    f = fn.forward if isinstance(fn, torch.nn.Module) else fn
    f = getattr(f, "__func__", f)
    for cell in getattr(f, "__closure__", None) or ():
        try:
            seen.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    if isinstance(fn, torch.nn.Module):
        seen += list(fn.parameters()) + list(fn.buffers())
    dts = sorted({str(t.dtype) for t in seen if isinstance(t, torch.Tensor) and t.is_complex()})
    if not dts:
        return ""
    return (f": {', '.join(dts)} tensors among its carries, inputs or closure (complex ops are ATen "
            "externs in a graph, their gradients left to eager; the body runs eagerly, one step at a time)")


class _Fallback(Exception):
    probe = None  # (result, pc, px) of the probe step, set by _Plan


def _needs_grad_in_eager(t, fake, live):
    """Whether t's autograd graph reaches a leaf other than a stand-in (fake) whose real input
    needs no gradient (a loop constant's graph, a live stand-in): eager's t would need a
    gradient. Stops at the first such leaf."""
    seen, todo = set(), [t.grad_fn]
    while todo:
        n = todo.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        v = getattr(n, "variable", None)
        if v is not None and (id(v) not in fake or id(v) in live):
            return True
        todo.extend(f for f, _ in n.next_functions)
    return False


def _alias(t):
    """t's memory as a tensor of its own (not a view: the body may update it in place)."""
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), t.storage_offset(),
                                                               t.shape, t.stride())


class _Standin(torch.autograd.Function):
    """t on t's memory, as a tensor of its own (no view) with a gradient history: a non-leaf
    the body may update in place."""

    @staticmethod
    def forward(ctx, t):
        return _alias(t)

    @staticmethod
    def backward(ctx, g):
        return g


class _Reattach(torch.autograd.Function):
    """Step 0 as the probe computed it on stand-in leaves (pc, px), attached to the caller's
    carries and x slices: the gradient reaching an output goes on through the probe's own
    graph (to the loop constants), and its part for the stand-ins to the real inputs."""

    @staticmethod
    def forward(ctx, leaves, nreal, *args):
        ctx.leaves, ctx.outs = leaves, args[nreal:]
        return tuple(_alias(o) for o in ctx.outs)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *g):
        pairs = [(o, gi) for o, gi in zip(ctx.outs, g) if gi is not None]
        want = [i for i, lf in enumerate(ctx.leaves) if lf is not None]
        grads = [None] * len(ctx.leaves)
        if pairs and want:
            got = torch.autograd.grad([o for o, _ in pairs], [ctx.leaves[i] for i in want],
                                      [gi for _, gi in pairs], retain_graph=True, allow_unused=True)
            for i, gi in zip(want, got):
                grads[i] = gi
        ctx.outs = ctx.leaves = None
        return (None, None) + tuple(grads) + tuple(g)


def _step0_of_probe(probe, c0, X):
    """The probe's (next carry, y) as eager's step 0 would give them: an output that is a
    stand-in is the caller's tensor; outputs with a gradient history go through _Reattach
    (those depending only on stand-ins whose real input needs no gradient are detached)."""
    res, pc, px, lc, lx = probe
    reals = list(c0) + [x[0] for x in X]
    stand = list(pc) + list(px)
    lvs = list(lc) + list(lx)  # the stand-ins' leaves (None: no gradient)
    flat, spec = pytree.tree_flatten(res)
    sub = {id(p): r for p, r in zip(stand, reals)}
    fake = {id(p) for p in lvs if p is not None}
    live = {id(p) for p, r in zip(lvs, reals) if p is not None and r.requires_grad}
    idx = []
    for i, o in enumerate(flat):
        if not isinstance(o, torch.Tensor):
            continue
        if id(o) in sub:
            flat[i] = sub[id(o)]
        elif o.grad_fn is not None:
            if _needs_grad_in_eager(o, fake, live):
                idx.append(i)
            else:
                flat[i] = o.detach()
    if idx:
        leaves = tuple(p if p is not None and id(p) in live else None for p in lvs)
        outs = _Reattach.apply(leaves, len(reals), *reals, *[flat[i] for i in idx])
        for i, o in zip(idx, outs):
            flat[i] = o
    return _split(pytree.tree_unflatten(flat, spec))


def _compiled(fn, static=False):
    """torchc's compiled body of fn: automatic dynamic shapes, or with static (a CUDA scan
    that needs no gradient: its persistent kernel is made for the call's shapes) always
    specialized, so a body called again at other sizes still gets a kernel"""
    cache = _bodies_static if static else _bodies
    try:
        cf = cache.get(fn)
    except TypeError:
        cf = None
    if cf is None:
        from ._api import _dynamic_flag
        cf = _C.CompiledFunction(fn, False, 0 if static else _dynamic_flag(None), 0)
        try:
            cache[fn] = cf
        except TypeError:
            pass
    return cf


def _code(fn):
    while isinstance(fn, functools.partial):  # the frame that runs is the wrapped function's
        fn = fn.func
    f = fn.forward if isinstance(fn, torch.nn.Module) else fn
    f = getattr(f, "__func__", f)
    return getattr(f, "__code__", None)


def scan(combine_fn, init, xs, *, dim=0, reverse=False):
    """torch.scan's semantics (see the module doc); compiled once by torchc, run in C."""
    leaves_init, spec_init = pytree.tree_flatten(init)
    leaves_xs, spec_xs = pytree.tree_flatten(xs)
    if len(leaves_xs) == 0:
        return init, []
    if not callable(combine_fn):
        raise RuntimeError(f"Combine_fn must be a callable, but got {combine_fn}")
    if not isinstance(dim, int):
        raise RuntimeError("Dim must be an int, but got " + str(type(dim)))
    if not isinstance(reverse, bool):
        raise RuntimeError("Reverse must be a bool, but got " + str(type(reverse)))
    if len(leaves_init) == 0:
        raise RuntimeError("scan() operator requires init leaves.")
    for x in leaves_init:
        if not isinstance(x, torch.Tensor):
            raise RuntimeError(f"All init leaves must be a Tensor but got {x}")
    for x in leaves_xs:
        if not isinstance(x, torch.Tensor):
            raise RuntimeError(f"All xs leaves must be a Tensor but got {x}")
    ndim = leaves_xs[0].ndim
    if not -ndim <= dim < max(ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                         f"but got {dim})")
    dim = dim % ndim if ndim else 0
    if any(x.ndim <= dim for x in leaves_xs) or any(x.shape[dim] == 0 for x in leaves_xs):
        raise RuntimeError("All xs leaves must at least have 'dim' number of dimensions and scan "
                           "dimension > 0")
    T = leaves_xs[0].shape[dim]
    if any(x.shape[dim] != T for x in leaves_xs):
        raise RuntimeError("All xs leaves must have the same size along the scan dimension")
    X = [torch.movedim(x, dim, 0) if dim != 0 else x for x in leaves_xs]
    if reverse:
        X = [torch.flip(x, [0]) for x in X]
    carry, ys = _scan_flat(combine_fn, spec_init, spec_xs, leaves_init, X)
    if reverse:
        ys = pytree.tree_map(lambda e: e.flip([0]), ys)
    if dim != 0:
        ys = pytree.tree_map(lambda e: torch.movedim(e, 0, dim) if dim < e.ndim else e, ys)
    return carry, ys


def _python_loop(body, spec_init, spec_xs, c0, X, first=None):
    """The reference semantics, over the compiled body: a Python loop (from step 1 when
    `first`, step 0's (carry, y), is given)."""
    carry = pytree.tree_unflatten(c0, spec_init)
    ys = []
    t0 = 0
    if first is not None:
        carry, y = first
        ys.append(pytree.tree_flatten(y))
        t0 = 1
    for t in range(t0, X[0].shape[0]):
        carry, y = _split(body(carry, pytree.tree_unflatten([x[t] for x in X], spec_xs)))
        ys.append(pytree.tree_flatten(y))
    spec_y = ys[0][1]
    out = [torch.stack([y[0][i] for y in ys]) for i in range(len(ys[0][0]))]
    return carry, pytree.tree_unflatten(out, spec_y)


def _split(res):
    if not isinstance(res, (tuple, list)) or len(res) != 2:
        raise RuntimeError("combine_fn must return a tuple (next_carry, y)")
    return res[0], res[1]


def _scan_flat(fn, spec_init, spec_xs, c0, X):
    global last_fallback
    forward_cuda = bool(c0) and c0[0].is_cuda and not (torch.is_grad_enabled() and any(
        t.requires_grad for t in list(c0) + list(X)))
    body = _compiled(fn, static=forward_cuda)
    try:
        plan = _Plan(fn, body, spec_init, spec_xs, c0, X)
    except _Fallback as e:
        last_fallback = str(e)
        _note(f"Python loop: {e}")
        log.info("torchc.scan runs a Python loop over the compiled body: %s", e)
        # the probe ran step 0 (and its side effects: an in-place update of an input or a
        # buffer, Python state after a graph break): the loop goes on from step 1 with its
        # result, never running step 0 twice
        return _python_loop(body, spec_init, spec_xs, c0, X, _step0_of_probe(e.probe, c0, X))
    last_fallback = None
    if plan.persist is not None:
        _note(plan.persist.describe())
        hT, ys = _C._scan_persist_run(plan.persist.cap, c0[0].contiguous(), plan.persist_args, plan.T)
        plan.persist_args = None
        return pytree.tree_unflatten([hT], spec_init), pytree.tree_unflatten(list(ys), plan.spec_y)
    _note("C loop: the body's compiled graph run per step in C")
    args, plan.args = plan.args, None
    outs = _ScanFn.apply(plan, *args) if plan.train else plan.forward()
    del args
    nc = len(c0)
    carry = pytree.tree_unflatten(list(outs[:nc]), spec_init)
    return carry, pytree.tree_unflatten(list(outs[nc:]), plan.spec_y)


def persistent_plan(combine_fn, init, xs, sm=90, nsm=132, with_args=False):
    """The persistent kernel (a Persistent) that a CUDA scan of combine_fn over (init, xs)
    would run, made from the body's graph on any device (the body runs once, as the probe),
    for sm_XY with nsm SMs; raises NotPersistent with the reason when the body does not
    qualify. dim 0, forward. with_args: (kernel, the tensors bound to its graph inputs as a
    CUDA call binds them)."""
    c0, spec_init = pytree.tree_flatten(init)
    X, spec_xs = pytree.tree_flatten(xs)
    try:
        plan = _Plan(combine_fn, _compiled(combine_fn, static=True), spec_init, spec_xs, c0, X,
                     plan_only=(sm, nsm))
    except _Fallback as e:
        raise NotPersistent(str(e).replace(f"{_CUDA_WHY}, and no persistent kernel: ", "")) from None
    if plan.persist is None:
        raise NotPersistent("the body runs as a C loop")
    return (plan.persist, plan.persist_args) if with_args else plan.persist


def _row(t):
    return t.stride(0) * t.element_size() if t.dim() else 0


class _Plan:
    """One scan call: the probe's record and the buffers and per-step addresses of its loops."""

    def __init__(self, fn, body, spec_init, spec_xs, c0, X, plan_only=None):
        self._probe = None
        self.persist = None
        self.plan_only = plan_only  # (sm, nsm): persistent_plan's, no CUDA needed
        try:
            self._setup(fn, body, spec_init, spec_xs, c0, X)
        except _Fallback as e:
            e.probe = self._probe
            raise
        finally:
            self._probe = None  # (the probe's result and stand-ins are not kept)

    def _setup(self, fn, body, spec_init, spec_xs, c0, X):
        T = X[0].shape[0]
        grad = torch.is_grad_enabled()
        pc = [c.detach().contiguous() for c in c0]
        pc = [c.detach() if c is c0[i] else c for i, c in enumerate(pc)]  # fresh objects
        px = [x.detach()[0] for x in X]
        # stand-ins for the step's inputs: on the caller's memory (an in-place update in the
        # body reaches it, as in eager); those that need a gradient are leaves seen through a
        # non-leaf alias (_Standin), which the body may update in place like eager's h and
        # x[t] (an in-place op on a leaf that requires grad raises)
        lc, lx = [None] * len(pc), [None] * len(px)
        if grad:
            for i, c in enumerate(pc):
                if c.is_floating_point():
                    lc[i] = c.requires_grad_()
                    pc[i] = _Standin.apply(c)
            for i, (p, x) in enumerate(zip(px, X)):
                if x.requires_grad and p.is_floating_point():
                    lx[i] = p.requires_grad_()
                    px[i] = _Standin.apply(p)
        res, rec = _C._scan_probe(body, (pytree.tree_unflatten(pc, spec_init),
                                         pytree.tree_unflatten(px, spec_xs)))
        self._probe = (res, pc, px, lc, lx)
        if rec is None:
            raise _Fallback("the body ran without a compiled graph" + _complex_hint(fn, c0, X) +
                            " (see torchc.explain)")
        info = _C._scan_info(rec)
        func = info["func"]
        code = _code(fn)
        if code is None or getattr(func, "__code__", None) is not code:
            raise _Fallback("the compiled frame is not combine_fn's own (it was not captured)")
        if info["why_not"] and info["why_not"] != _CUDA_WHY:
            raise _Fallback(info["why_not"])
        ncarry, y = _split(res)
        cl, cspec = pytree.tree_flatten(ncarry)
        if cspec != spec_init:
            raise RuntimeError(f"combine_fn's next carry {cspec} must have init's structure {spec_init}")
        for a, b in zip(cl, c0):
            if not isinstance(a, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
                raise RuntimeError("combine_fn's next carry must match init in shape and dtype: "
                                   f"got {getattr(a, 'shape', a)} {getattr(a, 'dtype', '')}, "
                                   f"init {tuple(b.shape)} {b.dtype}")
        yl, self.spec_y = pytree.tree_flatten(y)
        outs, ins = info["outs"], info["inputs"]
        nout = len(outs)
        nuser = info.get("nuser", nout) if info["bwd"] else nout

        def out_index(o, what):
            for j in range(nuser):
                if outs[j] is o:
                    return j
            raise _Fallback(f"a {what} of combine_fn is not a graph output (an input or a view returned)")
        cout = [out_index(a, "carry") for a in cl]
        yout = [out_index(a, "result") for a in yl]
        if len(set(cout)) != len(cout) or len(set(yout)) != len(yout):
            raise _Fallback("one graph output is returned twice in the carry or in the results")
        # graph inputs: carry k, x slice m, or a loop constant (closure, parameters)
        kind = []
        consts = []
        for o in ins:
            k = next((("c", i) for i, p in enumerate(pc) if p is o), None) or \
                next((("x", i) for i, p in enumerate(px) if p is o), None)
            if k is None:
                k = ("k", len(consts))
                consts.append(o)
            kind.append(k)
        off_cpu = any(isinstance(o, torch.Tensor) and o.device.type != "cpu" for o in list(outs) + list(ins))
        if self.plan_only or info["why_not"] == _CUDA_WHY or off_cpu:
            # CUDA: the body as one persistent kernel (C: selection, code, launch), else a
            # Python loop with both reasons
            k, why = _C._scan_persist(rec, list(c0), list(X), consts, kind, cout[0] if len(cout) == 1 else -1,
                                      yout, self.plan_only)
            _C._scan_release(rec)
            if k is None:
                raise _Fallback(f"{_CUDA_WHY}, and no persistent kernel: {why}")
            self.persist = Persistent(k)
            self.persist_args = [None if k_ == "c" else X[i] if k_ == "x" else consts[i] for k_, i in kind]
            self.T = T
            return
        for o in outs:
            if not isinstance(o, torch.Tensor) or not o.is_contiguous():
                raise _Fallback("a graph output is not a contiguous tensor")
        self.train = grad and (any(c.requires_grad for c in c0) or any(x.requires_grad for x in X) or
                               any(k.requires_grad for k in consts))
        if self.train and not info["bwd"]:
            raise _Fallback("the body has no compiled backward")
        if self.train and any(k.requires_grad and k.dtype not in _ADD_DT for k in consts):
            raise _Fallback("gradients of loop constants are summed in float32/float64 only")
        if self.train and any(c.dtype not in _ADD_DT for j, c in zip(cout, c0) if j in yout):
            raise _Fallback("a carry returned as a result too: its gradient sum is float32/float64 only")
        if self.train:
            for i, m in zip(info["bwd_out"], info["bwd_out_meta"]):
                if not (_dense_meta(m) if kind[i][0] == "c" else _dense_perm(m)):
                    raise _Fallback("a gradient the body's backward returns is not dense in the "
                                    "layout the loop keeps it in")
        if self.train and info["nsyms"]:
            raise _Fallback("a dynamic-shape body is not looped in training")
        # the record's and info's references to the probe step's tensors go now: a record
        # held by the autograd node until its graph dies kept a view of xs (and, through the
        # probe outputs' own autograd graph, more) alive, so the pool never reused xs's
        # buffer while the caller kept the loss
        _C._scan_release(rec)
        for k in ("inputs", "outs", "func"):
            info.pop(k)
        self.rec, self.info, self.T = rec, info, T
        self.c0, self.X, self.consts = c0, X, consts
        self.kind, self.cout, self.yout, self.nuser = kind, cout, yout, nuser
        self.args = list(c0) + list(X) + consts
        self.probe_outs = outs
        # shapes and dtypes the backward needs (it holds no input tensor but the saved ones)
        self.c0_meta = [(tuple(c.shape), c.dtype) for c in c0]
        self.x_dtype = [x.dtype for x in X]
        self.k_dtype = [q.dtype for q in consts]
        self.out_meta = [(tuple(o.shape), o.dtype) for o in outs]

    # ---- forward --------------------------------------------------------------------------
    def forward(self):
        T, outs, train = self.T, self.probe_outs, self.train
        with torch.no_grad():
            role = {j: k for k, j in enumerate(self.cout)}
            # a carry that is also a result (h' returned as (h', h')): its rows 1..T are the
            # result, one buffer of T + 1 rows and no copy per step; the result is a tensor of
            # its own on that storage (not a view: autograd forbids in-place ops on views made
            # inside a Function), row 0 is the initial carry
            self.ybuf = [None] * len(self.yout)
            self.cbuf = []
            for k, c in enumerate(self.c0):
                j = self.cout[k]
                rows = T + 1 if train or j in self.yout else 2
                b = _empty((rows,) + tuple(c.shape), c.dtype)
                b[0].copy_(c)
                self.cbuf.append(b)
                if j in self.yout:
                    self.ybuf[self.yout.index(j)] = _rows_alias(b, 1, T)
            for m, j in enumerate(self.yout):
                if self.ybuf[m] is None:
                    self.ybuf[m] = _empty((T,) + tuple(outs[j].shape), outs[j].dtype)
            ops = []
            ospec = []
            self.obuf = {}
            for j, o in enumerate(outs):
                if j in role:
                    b = self.cbuf[role[j]]
                    ospec.append((b, _row(b), 1, 0 if b.shape[0] > 2 else 2))
                elif j in self.yout:
                    b = self.ybuf[self.yout.index(j)]
                    ospec.append((b, _row(b), 0, 0))
                elif train:  # saved for the backward: one row per step
                    b = _empty((T,) + tuple(o.shape), o.dtype)
                    ospec.append((b, _row(b), 0, 0))
                else:  # read by nothing: one row, overwritten every step
                    b = _empty((1,) + tuple(o.shape), o.dtype)
                    ospec.append((b, 0, 0, 0))
                self.obuf[j] = b
            # step 0: the probe's outputs
            for j, o in enumerate(outs):
                if j in role:
                    self.cbuf[role[j]][1].copy_(o)
                else:
                    self.obuf[j][0].copy_(o)
            self.ispec = []
            for (k, i) in self.kind:
                if k == "c":
                    b = self.cbuf[i]
                    self.ispec.append((b, _row(b), 0, 0 if b.shape[0] > 2 else 2))
                elif k == "x":
                    x = self.X[i]
                    self.ispec.append((x, _row(x), 0, 0))
                else:
                    self.ispec.append((self.consts[i], 0, 0, 0))
            self.ospec = ospec
            self.probe_outs = outs = None
            if T > 1:
                _C._scan_loop(self.rec, 0, self.ispec, ospec, ops, 1, T)
            carry = [b[T if b.shape[0] > 2 else T % 2].clone() for b in self.cbuf]
        ys = tuple(self.ybuf)
        if not train:
            self.rec = None
            self.saved = ()
        else:
            # an x slice or loop constant the backward reads is saved too: autograd checks
            # its version (an in-place update between forward and backward raises, as in
            # eager) and drops it after the backward
            read = {self.kind[i] for (w, i) in self.info["bwd_in"] if w == _FWD_INPUT}
            # every stacked buffer the backward reads goes through save_for_backward: the
            # engine drops them after the backward (kept with retain_graph), so the pool can
            # reuse them while the caller still holds the graph (the old loss); ys are the
            # Function's outputs, and a reference from the plan, held by the node, would be a
            # cycle through their grad_fn that is never collected. The specs name the saved
            # buffers by index until the backward.
            saved = list(ys)
            for b in list(self.cbuf) + list(self.obuf.values()) + \
                    [self.X[i] for k, i in sorted(read) if k == "x"] + \
                    [self.consts[i] for k, i in sorted(read) if k == "k"]:
                if all(b is not t for t in saved):
                    saved.append(b)
            sid = {id(b): i for i, b in enumerate(saved)}

            def ph(sp):
                return (("s", sid[id(sp[0])]),) + tuple(sp[1:]) if id(sp[0]) in sid else sp
            # (an input the backward does not read: no reference kept)
            self.ispec = [ph(sp) if k[0] == "c" or k in read else None
                          for sp, k in zip(self.ispec, self.kind)]
            self.ospec = [ph(sp) for sp in self.ospec]
            self.saved = tuple(saved)
        self.ybuf = self.cbuf = self.obuf = None
        self.c0 = self.X = self.consts = None
        return tuple(carry) + ys

    # ---- backward (BPTT) ------------------------------------------------------------------
    def backward(self, grads, saved):
        T, info = self.T, self.info
        ny = len(self.yout)
        ys = saved[:ny]

        def res(sp):
            if sp is None:
                return None
            return (saved[sp[0][1]],) + tuple(sp[1:]) if isinstance(sp[0], tuple) else sp
        ispec = [res(sp) for sp in self.ispec]
        ospec = [res(sp) for sp in self.ospec]
        nc = len(self.c0_meta)
        gcar, gys = grads[:nc], grads[nc:]
        role = {j: k for k, j in enumerate(self.cout)}
        yrole = {j: m for m, j in enumerate(self.yout)}
        gc = []
        for k, (shape, dt) in enumerate(self.c0_meta):
            b = torch.zeros((2,) + shape, dtype=dt)
            if gcar[k] is not None:
                b[T % 2].copy_(gcar[k])
            gc.append(b)
        # a result without a gradient reads one zero row at every step
        gy = [(g.contiguous() if g is not None else torch.zeros((1,) + tuple(ys[m].shape[1:]),
                                                                  dtype=ys[m].dtype))
              for m, g in enumerate(gys)]
        ops, bin_ = [], []
        for (kind, idx) in info["bwd_in"]:
            if kind == _FWD_INPUT:
                bin_.append(ispec[idx])
            elif kind == _FWD_OUTPUT:
                bin_.append(ospec[idx])
            elif kind == _GRAD_CAME:  # a carry's gradient always flows back a step
                came = idx in role or (idx in yrole and gys[yrole[idx]] is not None)
                bin_.append((torch.tensor(came), 0, 0, 0))
            else:
                if idx in role:
                    k = role[idx]
                    s = (gc[k], _row(gc[k]), 1, 2)
                    if idx in yrole and gys[yrole[idx]] is not None:
                        m = yrole[idx]
                        ops.append((0, 0, s, (gy[m], _row(gy[m]), 0, 0), gy[m][0].numel(),
                                    self._dt(gy[m])))
                    bin_.append(s)
                elif idx in yrole:
                    m = yrole[idx]
                    bin_.append((gy[m], _row(gy[m]) if gys[m] is not None else 0, 0, 0))
                else:
                    shape, dt = self.out_meta[idx]
                    bin_.append((torch.zeros(shape, dtype=dt), 0, 0, 0))
        gx = [None] * len(self.x_dtype)
        acc = [None] * len(self.k_dtype)
        bout = []
        got_c = set()
        for k, (i, meta) in enumerate(zip(info["bwd_out"], info["bwd_out_meta"])):
            kind, idx = self.kind[i]
            sizes = tuple(meta[0])
            if kind == "c":
                bout.append((gc[idx], _row(gc[idx]), 0, 2))
                got_c.add(idx)
            elif kind == "x":  # (the compiled backward writes each step in its output's layout)
                n = math.prod(sizes)
                gx[idx] = _empty((T,) + sizes, self.x_dtype[idx], (n,) + tuple(meta[1]))
                bout.append((gx[idx], _row(gx[idx]), 0, 0))
            else:  # summed element by element in memory: both in the output's (dense) layout
                dt = self.k_dtype[idx]
                acc[idx] = torch.empty_strided(sizes, tuple(meta[1]), dtype=dt).zero_()
                tmp = torch.empty_strided(sizes, tuple(meta[1]), dtype=dt)
                bout.append((tmp, 0, 0, 0))
                ops.append((1, 0, (acc[idx], 0, 0, 0), (tmp, 0, 0, 0), tmp.numel(), self._dt(tmp)))
        for k in range(nc):
            if k not in got_c:  # no gradient flows into this carry input: zero per step
                ops.append((1, 2, (gc[k], _row(gc[k]), 0, 2), None, gc[k][0].numel() * gc[k].element_size(), 0))
        _C._scan_loop(self.rec, 1, bin_, bout, ops, T - 1, -1)
        gcarry = [gc[k][0].clone() if k in got_c else None for k in range(nc)]
        return gcarry + gx + acc

    @staticmethod
    def _dt(t):
        if t.dtype not in _ADD_DT:
            raise RuntimeError(f"torchc.scan: gradient sums in {t.dtype} are not supported")
        return _ADD_DT[t.dtype]


class _ScanFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, plan, *args):
        ctx.plan = plan
        # a result nobody differentiates (the stacked H of an RNN whose loss reads h_T) gets
        # None, not a materialized [T, ...] zero tensor (a 68 MB fill per expRNN step)
        ctx.set_materialize_grads(False)
        outs = plan.forward()
        ctx.save_for_backward(*plan.saved)
        plan.saved = None
        return outs

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.plan.backward(grads, ctx.saved_tensors))


# A compiled caller does not trace into scan's Python (pytrees, buffer set-up): the call is a
# graph break, and scan runs its own compiled loop.
_C.skip_code(scan.__code__)
