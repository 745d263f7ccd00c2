"""Import real torchvision and timm model code beside a torch whose torchvision C extension
does not load (this machine's CPU torch 2.13 wheel with PyPI's CUDA torchvision 0.28 wheel:
"operator torchvision::nms does not exist" at import).

torchvision registers fake (meta) kernels for torchvision::nms and ::qnms at import, which
needs the operators to exist. When its _C extension can't load, this shim defines the two
schemas with torch.library so that the import succeeds; calling them raises (no detection
model is run by the sweep). Nothing else changes: model code is torchvision's and timm's own.

    python -c "import tools.vision_shim; import torchvision.models, timm"

The packages themselves are installed without touching the installed torch, e.g.
    pip install --no-deps --target .vision_pkgs torchvision==0.28.0 timm
and this shim puts ./.vision_pkgs (or $VISION_PKGS) on sys.path when it exists.
"""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PKGS = os.environ.get("VISION_PKGS") or os.path.join(_ROOT, ".vision_pkgs")
if os.path.isdir(_PKGS) and _PKGS not in sys.path:
    sys.path.append(_PKGS)  # after site-packages: the installed torch stays the one imported

import torch  # noqa: E402

_lib = None


def _define_missing_ops():
    global _lib
    try:
        torch.ops.torchvision.nms.default  # noqa: B018
        return  # the real extension (or an earlier shim) defined them
    except (AttributeError, RuntimeError):
        pass
    import importlib.util
    spec = importlib.util.find_spec("torchvision")
    if spec is not None and spec.submodule_search_locations:
        so = os.path.join(list(spec.submodule_search_locations)[0], "_C.so")
        try:
            torch.ops.load_library(so)
            return
        except (OSError, RuntimeError):
            pass

    def unavailable(*args, **kwargs):
        raise NotImplementedError("torchvision's C extension is not loaded (tools/vision_shim.py)")

    _lib = torch.library.Library("torchvision", "DEF")
    for name in ("nms", "qnms"):
        _lib.define(f"{name}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _lib.impl(name, unavailable, "CompositeExplicitAutograd")


_define_missing_ops()
