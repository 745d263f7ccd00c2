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
    items = _hoist_items(gm)
    fwd = gm.forward
    code = getattr(getattr(fwd, "__func__", fwd), "__code__", None)
    if code is not None:
        _C.allow_code(code)
        try:  # logs and explain() name the user's lines, not FX's generated ones
            from ._logging import register_fx
            register_fx(gm, code.co_filename)
        except Exception:  # noqa: BLE001  (a GraphModule without code text: FX's names stay)
            pass
    # automatic dynamic shapes: a dim that changes between calls (the batch Dynamo made
    # symbolic) becomes symbolic at torchc's next compile. dynamic=1 would make every dim of
    # every input symbolic, parameters included, which the shape checks of linear/layer_norm
    # refuse (then each shape would recompile).
    dyn = -1
    cf = _C.CompiledFunction(fwd, False, dyn, 0)
    compiled_graphs.add(cf)
    if not items:
        return cf

    def run(*args):
        args = list(args)
        for i in items:
            args[i] = args[i].item()
        return cf(*args)

    run.compiled = cf
    return run


def _hoist_items(gm):
    """Dynamo passes a float attribute (a norm's eps) as a 0-d tensor input read with
    .item() when shapes are dynamic (torch._dynamo.config.specialize_float off); inside a
    graph that is a data-dependent read torchc cannot capture. An input whose only uses are
    .item() calls is read before the call instead: the compiled forward gets the number
    (guarded as a constant). Returns the indices of those inputs among the arguments."""
    out = []
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, p in enumerate(phs):
        users = list(p.users)
        if not users or not all(u.op == "call_method" and u.target == "item" and len(u.args) == 1
                                and not u.kwargs for u in users):
            continue
        for u in users:
            u.replace_all_uses_with(p)
            gm.graph.erase_node(u)
        out.append(i)
    if out:
        gm.recompile()
        real = getattr(gm, "real_recompile", None)  # a _LazyGraphModule: its code now
        if real is not None:
            real()
    return out


def register():
    """Adds "torchc" to Dynamo's registry (without list_backends(), which imports every
    backend module: this may run while torch._inductor is still importing)."""
    from torch._dynamo.backends import registry
    if "torchc" not in registry._COMPILER_FNS:
        registry.register_backend(torchc_backend, name="torchc")
