"""torchc — a drop-in torch.compile written in C.

    import torchc

    @torchc.compile
    def f(x, y):
        return torch.relu(x * y).sum(-1)

A PEP 523 frame hook (C) captures the frame's torch operations into a graph, the C Inductor
fuses them into loops and compiles them with LLVM ORC; anything unsupported runs eagerly.
"""
import torch  # noqa: F401  (libtorch must be loaded before the extension)


def _check_torch():
    """torchc._C is tied to the torch it was built against (C++ ABI): say so plainly."""
    try:
        from ._build_info import TORCH_VERSION
    except ImportError:  # an in-place build without setup.py's record
        return
    if TORCH_VERSION.split("+")[0] != torch.__version__.split("+")[0]:
        raise ImportError(f"torchc was built against torch {TORCH_VERSION} and cannot run with torch "
                          f"{torch.__version__} (C++ ABI); reinstall torchc for this torch "
                          "(pip install --force-reinstall --no-cache-dir torchc from source)")


_check_torch()

from . import _C
import atexit as _atexit
_atexit.register(_C.tier_shutdown)  # before Python's finalization frees graphs (inductor_c/tier.c)
from . import _autograd  # noqa: F401  (training: imported before any hooked call)
from ._api import (CompileArgumentError, ExplainOutput, OptimizedModule, allow_in_graph, compile,
                   config, disable, explain, reset)
from ._logging import set_logs
from ._scan import scan
from . import _logging, _torch
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
_torch.install()      # when torch._dynamo is imported: torch.compiler.reset/set_stance,
                      # torch._dynamo.config honoured, torch.compile(m, backend="torchc")
_logging.init()       # TORCHC_LOGS, the torchc.* loggers
from . import _optim
_optim.install()      # Optimizer.step inside torchc calls: compiled SGD/Adam/AdamW steps

__all__ = ["compile", "scan", "explain", "reset", "disable", "allow_in_graph", "config", "set_logs",
           "OptimizedModule", "ExplainOutput", "CompileArgumentError"]
__version__ = "0.1.0"
