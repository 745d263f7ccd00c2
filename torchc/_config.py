"""torchc.config: every setting of torchc in one object.

The settings of the compiler come from one table in C (inductor_c/ic_config.h: name, type,
default, whether it changes generated code, a one-line doc). Each is an attribute here:

    torchc.config.cse = True           # set from Python (wins over the environment)
    torchc.config.gpu_tile             # the value in effect
    del torchc.config.cse              # back to TORCHC_CSE, else the default
    print(torchc.config)               # every setting, its value and where it comes from

An environment variable TORCHC_<NAME> overrides a default (for scripts and A/B runs); a value
set here overrides both. Settings that change generated code are part of both code caches'
keys, so changing one compiles again instead of reusing code made under another value.
recompile_limit, num_threads and automatic_dynamic_shapes are the frontend's (torchc._api).
"""
from . import _C
from . import _api

_TABLE = {e["name"]: e for e in _C.config_table()}


class Config:
    """torchc.config: the settings (see the module's doc); validated on assignment."""

    def __getattr__(self, name):
        if name in _TABLE:
            return _C.config_get(name)[0]
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(_api.config, name)

    def __setattr__(self, name, value):
        if name in _TABLE:
            _C.config_set(name, value)
        else:
            setattr(_api.config, name, value)

    def __delattr__(self, name):
        if name not in _TABLE:
            raise AttributeError(f"torchc.config.{name} cannot be unset")
        _C.config_set(name, None)

    def __dir__(self):
        return sorted(set(_TABLE) | set(_api.config._values))

    def source(self, name):
        """where the value of setting name comes from: "default", "set" or its environment variable"""
        if name not in _TABLE:
            raise AttributeError(f"torchc.config has no setting {name!r}")
        return _C.config_get(name)[1]

    def table(self):
        """the settings table: [{name, type, default, choices, doc, env, codegen, value, source}]"""
        out = []
        for name, e in _TABLE.items():
            value, src = _C.config_get(name)
            out.append(dict(e, value=value, source=src))
        return out

    def changed(self):
        """{name: (value, source)} of the settings not at their default"""
        return {name: _C.config_get(name) for name in _TABLE if _C.config_get(name)[1] != "default"}

    def __repr__(self):
        lines = [repr(_api.config)]
        for e in self.table():
            src = "" if e["source"] == "default" else f"  [{e['source']}]"
            lines.append(f"  {e['name']} = {e['value']!r}{src}  # {e['doc']}")
        return "\n".join(lines)


config = Config()
