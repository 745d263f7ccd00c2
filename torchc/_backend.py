"""torch.compile(m, backend="torchc"): Dynamo captures, torchc compiles.

Dynamo hands a backend each graph as an FX GraphModule whose forward is generated Python
code calling torch functions node by node. torchc compiles that forward as it compiles any
function: its frame hook interprets the FX code's bytecode, so every FX node becomes a node
of torchc's graph IR (through the same torch-function table as user code), fused and
compiled by the C inductor; a node torchc does not support is a graph break inside the FX
code and runs with ATen, the rest stays compiled. Guards of torchc's own (shapes, dtypes) sit
under Dynamo's, so a changed shape that Dynamo passed as dynamic recompiles in torchc.

Registered on `import torchc`; torch._dynamo.list_backends() lists "torchc".
"""
import weakref

import torch

from . import _C

# the CompiledFunctions made for Dynamo's graphs (weak): torchc.explain / tests
compiled_graphs = weakref.WeakSet()


def torchc_backend(gm, example_inputs, **options):
    """A Dynamo backend: returns a callable running gm's forward compiled by torchc."""
    from . import _api
    if options:
        _api._check_options("torchc", None, options)
    real = getattr(gm, "real_recompile", None)  # a _LazyGraphModule: generate its code now
    if real is not None:
        real()
    fwd = gm.forward
    code = getattr(getattr(fwd, "__func__", fwd), "__code__", None)
    if code is not None:
        _C.allow_code(code)
        try:  # logs and explain() name the user's lines, not FX's generated ones
            from ._logging import register_fx
            register_fx(gm, code.co_filename)
        except Exception:  # noqa: BLE001  (a GraphModule without code text: FX's names stay)
            pass
    dyn = 1 if any(isinstance(a, torch.SymInt) for a in example_inputs) else -1
    cf = _C.CompiledFunction(fwd, False, dyn, 0)
    compiled_graphs.add(cf)
    return cf


def register():
    """Adds "torchc" to Dynamo's registry (without list_backends(), which imports every
    backend module: this may run while torch._inductor is still importing)."""
    from torch._dynamo.backends import registry
    if "torchc" not in registry._COMPILER_FNS:
        registry.register_backend(torchc_backend, name="torchc")
