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
from ._config import config  # noqa: F811  (every setting: the C table plus _api's)



def _find_ptxas():
    """A ptxas for the GPU path (parallel PTX assembly): TORCHC_PTXAS, CUDA_HOME's, PATH's, or
    the one Triton ships with torch's CUDA wheels. None: the driver JIT-compiles the PTX."""
    import os
    import shutil
    import importlib.util
    cands = [os.environ.get("TORCHC_PTXAS")]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            cands.append(os.path.join(home, "bin", "ptxas"))
    cands.append(shutil.which("ptxas"))
    try:
        spec = importlib.util.find_spec("triton")
        for loc in (spec.submodule_search_locations or []) if spec else []:
            cands.append(os.path.join(loc, "backends", "nvidia", "bin", "ptxas"))
    except (ImportError, ValueError):
        pass
    for c in cands:
        if c == "0":
            return None
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


_C.set_ptxas(_find_ptxas())

__all__ = ["compile", "explain", "reset", "disable", "allow_in_graph", "config",
           "OptimizedModule", "ExplainOutput"]
__version__ = "0.1.0"
