"""Each op of issues 21/22's fallback round, compiled by torchc: graphs, breaks and the reasons
torchc.explain reports (before this round each of them broke the graph: "call to X not
supported"). Run from the repository root: python tools/ops_round_check.py [names...]
Inference, and training (inputs that require grad: a backward graph too) where the op is
differentiable. Exit status 1 if any is not captured whole."""
import sys

import torch
import torch.nn.functional as F

import torchc

x = torch.randn(4, 6, 5)
w = torch.randn(10, 3)
CASES = {
    "hardshrink": (lambda x: F.hardshrink(x, 0.5), (x,), True),
    "softshrink": (lambda x: F.softshrink(x, 0.5), (x,), True),
    "celu": (lambda x: F.celu(x, 1.5), (x,), True),
    "threshold": (lambda x: F.threshold(x, 0.1, 20.0), (x,), True),
    "channel_shuffle": (lambda x: F.channel_shuffle(x, 2), (x,), True),
    "nn.ChannelShuffle": (torch.nn.ChannelShuffle(3), (x,), True),
    "instance_norm": (lambda x: F.instance_norm(x), (x,), True),
    "nn.InstanceNorm2d(affine, running stats)": (torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
                                                 (x[None],), True),
    "embedding_bag 2-D max": (lambda w, i: F.embedding_bag(i, w, mode="max"), (w, torch.randint(0, 10, (4, 3))), True),
    "embedding_bag offsets mean": (lambda w, i, o: F.embedding_bag(i, w, o, mode="mean"),
                                   (w, torch.randint(0, 10, (7,)), torch.tensor([0, 2, 2, 5])), True),
    "take_along_dim": (lambda x, i: torch.take_along_dim(x, i, 2), (x, torch.randint(0, 5, (4, 6, 3))), True),
    "nanmean": (lambda x: torch.nanmean(x, 1), (x,), True),
    ">> / <<": (lambda a, b: (a >> 2, a << b), (torch.randint(-99, 99, (5,)), torch.randint(0, 9, (5,))), False),
    "bitwise_left_shift": (lambda a, b: torch.bitwise_left_shift(a, b), (torch.randint(-9, 9, (5,)), torch.randint(0, 5, (5,))), False),
    "index_put_ accumulate": (lambda a, v: a.clone().index_put_((torch.tensor([0, 2, 0]),), v, accumulate=True),
                              (torch.randn(5, 3), torch.randn(3, 3)), True),
    "torch.index_put": (lambda a, v: torch.index_put(a, (torch.tensor([0, 2, 4]),), v), (torch.randn(5, 3), torch.randn(3, 3)), True),
    "put_": (lambda a, v: a.clone().put_(torch.tensor([0, 2, 14]), v, accumulate=True), (torch.randn(5, 3), torch.randn(3)), True),
}


def main(names):
    bad = 0
    for name in names or CASES:
        fn, args, diff = CASES[name]
        for train in (False, True) if diff else (False,):
            a = [t.detach().clone().requires_grad_(train and t.is_floating_point()) for t in args]
            if train and isinstance(fn, torch.nn.Module):
                fn.train()
            torchc.reset()
            ex = torchc.explain(fn)(*a)
            whole = ex.graph_count == 1 and ex.graph_break_count == 0 and not ex.eager_frames and not ex.break_reasons
            bwd = getattr(ex, "backward_graph_count", 0)
            print(f"{name:42s} {'train' if train else 'infer'}: graphs={ex.graph_count} breaks={ex.graph_break_count} "
                  f"ops={ex.op_count}" + (f" backward_graphs={bwd}" if train else "") +
                  ("" if whole else f"  NOT WHOLE: {ex.break_reasons} {ex.eager_frames}"))
            bad += not whole or (train and bwd != 1)
    return bad


if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1:]) else 0)
