"""torch's own controls, honoured by torchc once it is imported:

  torch.compiler.reset() / torch._dynamo.reset()   also forget torchc's compiled code
  torch.compiler.set_stance(...)                   read at each compiled call (csrc/dropin.c):
                                                   force_eager, eager_on_recompile,
                                                   fail_on_recompile, eager_then_compile
  torch._dynamo.config.recompile_limit /           torchc's defaults until torchc.config (or
    automatic_dynamic_shapes                       TORCHC_<NAME>) sets its own
  torch.get_num_threads()                          followed at each compiled call
  torch._dynamo.mark_dynamic / maybe_mark_dynamic  read when a frame is captured
    / mark_static                                  (dynamo_hook/marks.c)
  torch.compiler.is_compiling()                    True inside captured code
  torch.compiler.disable(fn)                       fn runs eagerly (a graph break)
  torch.compile(m, backend="torchc")               Dynamo's capture, torchc's code (_backend.py)

torch._dynamo takes seconds to import and torchc does not need it to run: these are
installed when torch._dynamo is imported (at once if it already is), through an import
hook, so `import torchc` stays cheap.
"""
import functools
import importlib.abc
import importlib.util
import sys

from . import _C

_installed = False


def _wrap_reset(orig):
    if getattr(orig, "_torchc_wrapped", False):
        return orig

    @functools.wraps(orig)
    def reset(*args, **kwargs):
        from . import _api
        try:
            return orig(*args, **kwargs)
        finally:
            _api.reset()

    reset._torchc_wrapped = True
    return reset


def _install_now():
    global _installed
    if _installed:
        return
    _installed = True
    import torch._dynamo
    import torch._dynamo.eval_frame
    from . import _backend
    _C.set_stance_globals(vars(torch._dynamo.eval_frame))
    _C.set_limit_source(torch._dynamo.config)  # below torchc.config.recompile_limit's own value
    torch._dynamo.reset = _wrap_reset(torch._dynamo.reset)
    torch._dynamo.reset_code_caches = _wrap_reset(torch._dynamo.reset_code_caches)
    _mark_disable_wrappers(torch._dynamo.eval_frame)
    _backend.register()


def _mark_disable_wrappers(ef):
    """torch.compiler.disable(fn) returns a wrapper made by DisableContext.__call__: its code
    (one for every disabled function) is never traced into (a call of it is a graph break)
    and, like Dynamo's set_eval_frame(None), nothing it calls is hooked."""
    import types
    call = getattr(getattr(ef, "DisableContext", None), "__call__", None)
    code = getattr(call, "__code__", None)
    for c in (code.co_consts if code is not None else ()):
        if isinstance(c, types.CodeType) and c.co_name == "_fn":
            _C.skip_code_tree(c)


def dynamo():
    """torch._dynamo, imported (and torchc's hooks installed) on first need."""
    import torch._dynamo
    _install_now()
    return torch._dynamo


class _Finder(importlib.abc.MetaPathFinder):
    """Runs _install_now right after torch._dynamo finishes importing."""

    def find_spec(self, name, path, target=None):
        if name != "torch._dynamo":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            pass
        if spec is None or spec.loader is None:
            return spec
        orig = spec.loader.exec_module

        def exec_module(module):
            orig(module)
            _install_now()

        spec.loader.exec_module = exec_module
        return spec


def install():
    if "torch._dynamo" in sys.modules and hasattr(sys.modules["torch._dynamo"], "reset"):
        _install_now()
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
