"""The thin autograd node of compiled training graphs (issue 22).

torchc compiles the forward graph and, in C (inductor_c/graph/autograd.c), its backward
graph. After the compiled forward has run, csrc/train.c calls `attach` with the forward's
outputs, the tensors the backward reads and the inputs that require grad; the outputs come
back with a grad_fn whose backward runs the compiled backward graph. Everything else
(`loss.backward()`, `torch.autograd.grad`, `retain_graph`, accumulation into `.grad`, hooks)
is torch's autograd engine, as in eager.

Double backward (`create_graph=True`) is not compiled: the backward graph's gradients are
returned, but through a node that raises a clear error if they are differentiated again
(never a silently missing second-order term), and the train object is marked so that the
frame that made this graph runs eagerly from its next call, with the reason in
torchc.explain().
"""
import torch

DOUBLE_BACKWARD = (
    "torchc: double backward (create_graph=True) through a compiled training graph is not "
    "supported; the frame that made it runs eagerly from its next call (torchc.explain shows "
    "the reason). Call it once more, or run it under torchc.disable()."
)


class CompiledNode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, runner, saved, outs, diff, *inputs):
        ctx.runner = runner
        # the gradients of outputs the loss does not use come as None (the runner reads them
        # as zeros): an input reached only through such outputs gets None, as in eager
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*saved)
        nondiff = [o for o, d in zip(outs, diff) if not d]
        if nondiff:
            ctx.mark_non_differentiable(*nondiff)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        create_graph = torch.is_grad_enabled()
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
        return (None, None, None, None) + tuple(res)


def attach(runner, saved, outs, diff, *inputs):
    return CompiledNode.apply(runner, saved, outs, diff, *inputs)
