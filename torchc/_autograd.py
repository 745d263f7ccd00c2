"""The thin autograd node of compiled training graphs (issue 22).

torchc compiles the forward graph and, in C (inductor_c/graph/autograd.c), its backward
graph. After the compiled forward has run, csrc/train.c calls `attach` with the forward's
outputs, the tensors the backward reads and the inputs that require grad; the outputs come
back with a grad_fn whose backward runs the compiled backward graph. Everything else
(`loss.backward()`, `torch.autograd.grad`, `retain_graph`, accumulation into `.grad`, hooks)
is torch's autograd engine, as in eager.

Double backward (`create_graph=True`) is not compiled. Where the forward graph's gradients
are torch's rules over its ops (no custom autograd.Function or leaf made in it: its no_grad
regions and detaches are detached in the replay; inductor_c ic_graph_grad_plain), it has an
eager form (torchc/_fx_export.py) and no random op, the node keeps references to the
forward's inputs (None for what the frame updated in place) with their versions at the
forward, and a backward with create_graph=True replays the forward's ops eagerly with
autograd and returns torch.autograd.grad of that with create_graph=True: eager's
differentiable gradients, first call included. A plain backward drops those references.
Otherwise (or an input the outputs read updated in place since the forward) the compiled
backward's gradients are returned through a node that raises a clear error if they are
differentiated again (never a silently missing second-order term). Either way the train
object is marked so that the frame that made this graph runs eagerly from its next call,
with the reason in torchc.explain().
"""
import weakref

import torch

DOUBLE_BACKWARD = (
    "torchc: double backward (create_graph=True) through a compiled training graph is not "
    "supported; the frame that made it runs eagerly from its next call (torchc.explain shows "
    "the reason). Call it once more, or run it under torchc.disable()."
)


_RANDOM = ("dropout", "rand", "bernoulli", "normal", "multinomial", "poisson")


def _replay_fn(holder, device, diff):
    """holder: [forward graph text, eager form or None, stop-gradient value ids], the train
    object's (csrc/train.c). The eager form (built once): the forward as a GraphModule computing
    the program's differentiable outputs only (diff: per program output; the others are the
    frame's in-place updates), with its stop-gradient values detached, and the inputs they
    read; False where there is none."""
    if holder[1] is None:
        fn = False
        text = holder[0]
        if not any(w in text for w in _RANDOM):  # a replay would draw other numbers
            from . import _fx_export
            try:
                gm, _ = _fx_export.export(text, device, frozenset(holder[2]))
                if gm.torchc_input_specs is None:  # symbolic sizes: not replayed
                    g = gm.graph
                    out = next(n for n in g.nodes if n.op == "output")
                    out.args = (tuple(o for o, d in zip(out.args[0], diff) if d),)
                    g.eliminate_dead_code()
                    gm.recompile()
                    need = {int(n.target[3:]) for n in g.nodes if n.op == "placeholder" and n.users}
                    fn = (gm, need)
            except Exception:  # noqa: BLE001 - no eager form: the clear error stays
                fn = False
        holder[1] = fn
    return holder[1]


class Write(torch.autograd.Function):
    """An in-place update of a tensor the frame received (dynamo_hook/train_inplace_store.c):
    its new value, computed by the compiled forward, is already copied in (without a version
    bump); marked dirty here (one bump), the tensor's history becomes this node's, whose
    gradient goes to the value (through the compiled backward to the tensor's old value, as
    eager's in-place op's). A view's base gets its history rewritten as eager's CopySlices
    (which wants the updated tensor as the first input). zeros: the old value gets zeros
    (eager's in-place op passes zeros where it overwrote; the compiled backward gives it none)."""

    @staticmethod
    def forward(ctx, dst, value, zeros):
        ctx.mark_dirty(dst)
        # a view: autograd puts this node inside CopySlices, which sends the base's gradient
        # outside the view to the base's old history only with the old value's gradient defined
        # (None there dropped it all): zeros, as the value's path carries the view's own part
        ctx.zeros = (dst.shape, dst.dtype, dst.device) if zeros or dst._is_view() else None
        return dst

    @staticmethod
    def backward(ctx, g):
        z = ctx.zeros
        old = torch.zeros(z[0], dtype=z[1], device=z[2]) if z is not None and ctx.needs_input_grad[0] else None
        return old, g, None


def _check_kept(kept):
    """eager's check of what its autograd keeps, for the tensors the frame updated in place
    whose new values the backward reads (it reads its own copy): one updated since raises"""
    for ref, want in kept:
        t = ref()
        if t is not None and t._version != want:
            fn = type(t.grad_fn).__name__ if t.grad_fn is not None else "Write"
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{t.type()} [{', '.join(str(n) for n in t.shape)}]], which is output 0 of {fn}, "
                f"is at version {t._version}; expected version {want} instead.")


class CompiledNode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, runner, saved, outs, diff, replay, writes, *inputs):
        ctx.runner = runner
        # the tensors the frame updated whose new values eager keeps, at their versions after
        # their Write (weak: the tensor's history leads here)
        ctx.kept = [(weakref.ref(d), d._version + 1) for _, d, keep, _ in writes if keep]
        # the gradients of outputs the loss does not use come as None (the runner reads them
        # as zeros): an input reached only through such outputs gets None, as in eager
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*saved)
        nondiff = [o for o, d in zip(outs, diff) if not d]
        if nondiff:
            ctx.mark_non_differentiable(*nondiff)
        ctx.replay = None
        if replay is not None:  # with the inputs' versions (read by csrc/train.c), checked before a replay
            ctx.replay = (replay[0], replay[1], replay[2], diff, inputs)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        create_graph = torch.is_grad_enabled()
        if ctx.kept:
            _check_kept(ctx.kept)
        if not create_graph:
            # a plain backward drops the replay's references (the forward's inputs stay alive
            # no longer than eager keeps them); a double backward after backward(retain_graph=
            # True) then gets the clear error below
            ctx.replay = None
        elif ctx.replay is not None:
            res = _replayed(ctx, grads)
            if res is not None:
                ctx.runner(None, None, True)  # the frame runs eagerly from its next call
                return (None,) * 6 + res
        with torch.no_grad():
            res = tuple(ctx.runner(ctx.saved_tensors, grads, create_graph))
        defined = [i for i, r in enumerate(res) if r is not None]
        if create_graph and defined:
            # the gradients are not differentiable: any use of them in a graph raises
            err = torch._C._functions.DelayedError(DOUBLE_BACKWARD.encode(), len(defined))
            wrapped = err(*[res[i].detach().requires_grad_(True) for i in defined])
            wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
            res = list(res)
            for i, w in zip(defined, wrapped):
                res[i] = w
            res = tuple(res)
        return (None,) * 6 + tuple(res)


def _replayed(ctx, grads):
    """the gradients of ctx's inputs by an eager replay of the forward with autograd,
    differentiable (create_graph); None where the forward cannot be replayed"""
    holder, fin, versions, diff, inputs = ctx.replay
    dev = next((t.device for t in fin if isinstance(t, torch.Tensor)), torch.device("cpu"))
    fn = _replay_fn(holder, dev, diff)
    if fn is False:
        return None
    fn, need = fn
    if any(fin[i] is None for i in need):
        return None  # an input the frame updated in place feeds an output
    for i in need:
        if isinstance(fin[i], torch.Tensor) and fin[i]._version != versions[i]:
            return None  # updated in place since the forward: its value then is gone
    args = [t if i in need else None for i, t in enumerate(fin)]
    with torch.enable_grad(), torch.autocast(dev.type, enabled=False):  # the IR's casts only
        outs = fn(*args)
    pairs = [(o, g_) for o, g_ in zip(outs, [g_ for g_, d in zip(grads, diff) if d]) if g_ is not None]
    want = [i for i in range(len(inputs)) if ctx.needs_input_grad[6 + i]]
    res = [None] * len(inputs)
    pairs = [(o, g_) for o, g_ in pairs if o.requires_grad]
    if not pairs or not want:
        return tuple(res)
    got = torch.autograd.grad([o for o, _ in pairs], [inputs[i] for i in want],
                              [g_ for _, g_ in pairs], create_graph=True, allow_unused=True)
    for i, r in zip(want, got):
        res[i] = r
    return tuple(res)


def attach(runner, saved, outs, diff, replay, writes, *inputs):
    """writes: (j, tensor, keep, zeros) per in-place update of a tensor the frame received,
    whose new value is program output j (see Write)"""
    res = CompiledNode.apply(runner, saved, outs, diff, replay, writes, *inputs)
    if writes:
        res = list(res)
        for j, dst, _, zeros in writes:
            res[j] = Write.apply(dst, res[j], zeros)
        res = tuple(res)
    return res


# The replay runs eagerly, as torch's own code: nothing it calls is hooked. Its first call
# exports the graph through FX and meta tensors, which imports torch._dynamo and its
# libraries; hooked, the dataclass __init__s and generated code of those imports ("<string>"
# files, not skipped by directory) made ~1700 compiles over ~600000 frames (6-12 s) in the
# first double backward.
from . import _C  # noqa: E402

_C.skip_code_tree(_replayed.__code__)
