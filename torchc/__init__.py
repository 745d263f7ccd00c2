"""torchc — a drop-in torch.compile written in C.

    import torchc

    @torchc.compile
    def f(x, y):
        return torch.relu(x * y).sum(-1)

A PEP 523 frame hook (C) captures the frame's torch operations into a graph, the C Inductor
fuses them into loops and compiles them with LLVM ORC; anything unsupported runs eagerly.
"""
import torch  # noqa: F401  (libtorch must be loaded before the extension)

from . import _C
from ._api import (ExplainOutput, OptimizedModule, allow_in_graph, compile, config, disable,
                   explain, reset)

__all__ = ["compile", "explain", "reset", "disable", "allow_in_graph", "config",
           "OptimizedModule", "ExplainOutput"]
__version__ = "0.1.0"
