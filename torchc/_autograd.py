"""The thin autograd node of compiled training graphs (issue 22).

torchc compiles the forward graph and, in C (inductor_c/graph/autograd.c), its backward
graph. After the compiled forward has run, csrc/train.c calls `attach` with the forward's
outputs, the tensors the backward reads and the inputs that require grad; the outputs come
back with a grad_fn whose backward runs the compiled backward graph. Everything else
(`loss.backward()`, `torch.autograd.grad`, `retain_graph`, accumulation into `.grad`, hooks)
is torch's autograd engine, as in eager.

Double backward (`create_graph=True` followed by a second backward through these
gradients) is not compiled: the first backward works, a second one raises torch's
once_differentiable error.
"""
import torch
from torch.autograd.function import once_differentiable


class CompiledNode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, runner, saved, outs, diff, *inputs):
        ctx.runner = runner
        ctx.save_for_backward(*saved)
        nondiff = [o for o, d in zip(outs, diff) if not d]
        if nondiff:
            ctx.mark_non_differentiable(*nondiff)
        return tuple(outs)

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        return (None, None, None, None) + tuple(ctx.runner(ctx.saved_tensors, grads))


def attach(runner, saved, outs, diff, *inputs):
    return CompiledNode.apply(runner, saved, outs, diff, *inputs)
