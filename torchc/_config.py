"""torchc.config: every setting of torchc in one object.

Every setting is a row of one table in C (inductor_c/ic_config.h: name, type, default, whether
it changes generated code, allowed values, a one-line doc) — the compiler's, and the frontend's
(the limits of one trace, the recompile limit, threads, automatic dynamic shapes, the capture's
conv choices). Each is an attribute here:

    torchc.config.cse = True           # set from Python (wins over the environment)
    torchc.config.gpu_tile             # the value in effect
    del torchc.config.cse              # back to TORCHC_CSE, else the default
    torchc.config.recompile_limit = None   # same as del: the environment, else the default
    print(torchc.config)               # every setting, its value and where it comes from

An environment variable TORCHC_<NAME> overrides a default (for scripts and A/B runs); a value
set here overrides both. Settings that change generated code are part of both code caches'
keys, so changing one compiles again instead of reusing code made under another value.
explain() lists the settings not at their default.

Three settings follow torch's own while at their default: recompile_limit
(torch._dynamo.config.recompile_limit), num_threads (torch.get_num_threads() at each compiled
call) and automatic_dynamic_shapes (torch._dynamo.config.automatic_dynamic_shapes); reading
one gives the value in effect.
"""
import os
import sys
import warnings

import torch

from . import _C

_TABLE = {e["name"]: e for e in _C.config_table()}
# rows whose default means "torch's setting": the value that says so
_FOLLOW = {"recompile_limit": 0, "num_threads": 0, "automatic_dynamic_shapes": -1}


def _dynamo_config():
    from . import _torch
    return _torch.dynamo().config


def automatic_dynamic():
    """automatic_dynamic_shapes in effect, without importing torch._dynamo for it"""
    v = _C.config_get("automatic_dynamic_shapes")[0]
    if v >= 0:
        return bool(v)
    dyn = sys.modules.get("torch._dynamo")
    return bool(dyn.config.automatic_dynamic_shapes) if dyn is not None and hasattr(dyn, "config") else True


def _apply_threads():
    """num_threads: a value (set, or TORCHC_NUM_THREADS) fixes the CPU runtime's threads;
    the default follows torch.get_num_threads() at each compiled call (csrc/dropin.c)."""
    n = _C.config_get("num_threads")[0]
    if n > 0:
        _C.set_num_threads(n)
        _C.follow_torch_threads(False)
    else:
        _C.follow_torch_threads(True)


class Config:
    """torchc.config: the settings (see the module's doc); validated on assignment."""

    def __getattr__(self, name):
        if name not in _TABLE:
            if name.startswith("_"):
                raise AttributeError(name)
            raise AttributeError(f"torchc.config has no setting {name!r}")
        v = _C.config_get(name)[0]
        if name in _FOLLOW and v == _FOLLOW[name]:
            if name == "num_threads":
                return torch.get_num_threads()
            if name == "automatic_dynamic_shapes":
                return automatic_dynamic()
            return _dynamo_config().recompile_limit
        if name == "automatic_dynamic_shapes":
            return bool(v)
        return v

    def __setattr__(self, name, value):
        if name not in _TABLE:
            raise AttributeError(f"torchc.config has no setting {name!r}")
        if value is not None and name == "automatic_dynamic_shapes":
            if not isinstance(value, bool):
                raise ValueError(f"torchc.config.{name} must be a bool, got {value!r}")
            value = int(value)
        elif value is not None and name in _FOLLOW:
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"torchc.config.{name} must be a positive int (None: torch's), got {value!r}")
        _C.config_set(name, value)
        if name == "num_threads":
            _apply_threads()

    def __delattr__(self, name):
        if name not in _TABLE:
            raise AttributeError(f"torchc.config has no setting {name!r}")
        self.__setattr__(name, None)

    def __dir__(self):
        return sorted(_TABLE)

    def source(self, name):
        """where the value of setting name comes from: "default", "set" or its environment variable"""
        if name not in _TABLE:
            raise AttributeError(f"torchc.config has no setting {name!r}")
        return _C.config_get(name)[1]

    def table(self):
        """the settings table: [{name, type, default, choices, doc, env, codegen, value, source}]
        (value: the table's own, e.g. 0 for recompile_limit following torch's)"""
        out = []
        for name, e in _TABLE.items():
            value, src = _C.config_get(name)
            out.append(dict(e, value=value, source=src))
        return out

    def changed(self):
        """{name: (value, source)} of the settings not at their default"""
        return {name: _C.config_get(name) for name in _TABLE if _C.config_get(name)[1] != "default"}

    def __repr__(self):
        lines = ["torchc.config("]
        for e in self.table():
            src = "" if e["source"] == "default" else f"  [{e['source']}]"
            lines.append(f"  {e['name']} = {getattr(self, e['name'])!r}{src}  # {e['doc']}")
        return "\n".join(lines) + "\n)"


_ENV_WARNED = set()


def check_env():
    """A TORCHC_<NAME> whose value is not one the setting takes (a typo, a removed choice, a
    number out of range) is ignored and the default applies: warned here once per variable and
    value, with what the setting accepts. Called at import and by each torchc.compile()."""
    for name, e in _TABLE.items():
        v = os.environ.get(e["env"])
        if not v or (e["env"], v) in _ENV_WARNED:
            continue
        why = _C.config_check(name, v)
        if why is None:
            continue
        _ENV_WARNED.add((e["env"], v))
        src = _C.config_get(name)[1]
        now = "torchc.config's value applies" if src == "set" else f"the default {e['default']!r} applies"
        warnings.warn(f"torchc: the environment variable {e['env']}={v!r} is ignored ({why}); {now}",
                      RuntimeWarning, stacklevel=3)


config = Config()
_apply_threads()
check_env()
