"""The function (and types) that a TorchFunctionMode's __torch_function__ receives from eager for
a Python operator on a tensor: irregular (x - 1 passes Tensor.sub, 1 - x Tensor.__rsub__, 1 < x
Tensor.gt), so torch itself is asked once per operator, under a mode that records the call and
stops it. dynamo_hook/sym_tfm.c passes the answer to the mode it traces."""
import operator

import torch
from torch.overrides import TorchFunctionMode


class _Found(Exception):
    pass


class _Probe(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise _Found(func, types)


_UNARY = ("neg", "pos", "abs", "invert")
_cache = {}


def operator_func(name, reflected):
    """(func, types) for operator.<name>(x, 1), or (1, x) when reflected, or (x,) for a unary
    operator, x a tensor; None when torch does not dispatch it"""
    key = (name, reflected)
    if key not in _cache:
        fn = getattr(operator, name)
        x = torch.empty(0)
        found = None
        try:
            with _Probe():
                if name in _UNARY:
                    fn(x)
                elif reflected:
                    fn(1, x)
                else:
                    fn(x, 1)
        except _Found as e:
            found = e.args
        except Exception:
            found = None
        _cache[key] = found
    return _cache[key]
