#!/usr/bin/env python3
"""Run tests with the compiler gone and list the ones that still pass (issue 24: tests that
can fail).

    python tools/no_compiler_check.py tests/test_reductions.py tests/test_cse.py [pytest args]

"The compiler gone" is: torchc.compile the identity (a function or module comes back as it
is; the decorator form too), torch.compile's backend="torchc" running each graph's forward
eagerly, and torchc.scan's body the plain Python function. The substitution is made by a
sitecustomize (on PYTHONPATH, so the tests' child processes get it too) when torchc is
imported, before tests/conftest.py wraps those functions to count calls; a child process
started with an environment of its own gets the sitecustomize's folder on its PYTHONPATH.

Every test that passes that way must be marked needs_no_compiler (tests/conftest.py header):
the script prints the passing tests without that mark and exits 1 if there are any. With
conftest.py's checks, a test that calls torchc.compile and is not marked fails by itself
("torchc.compile was called but nothing was compiled"); what this finds are tests that
compile through another way (a child process, an API that compiles without torchc.compile)
or mark themselves wrongly.
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SITECUSTOMIZE = r'''
import importlib.abc
import importlib.util
import sys


def _identity_compile(model=None, *example_inputs, **kwargs):
    if example_inputs:  # torch.compile(m, backend=torchc.compile): Dynamo passes (gm, inputs)
        return model.forward
    if model is None:
        return lambda m: m
    return model


def _eager_backend(gm, example_inputs, **options):
    return gm.forward


def _patch(torchc):
    torchc.compile = _identity_compile
    torchc._api.compile = _identity_compile
    from torchc import _backend, _scan
    _backend.torchc_backend = _eager_backend
    _scan._compiled = lambda fn: fn
    if "torch._dynamo" in sys.modules:
        from torch._dynamo.backends import registry
        if "torchc" in registry._COMPILER_FNS:
            registry._COMPILER_FNS["torchc"] = _eager_backend


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torchc":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            _patch(module)
        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Finder())


def _keep_in_children():
    """a child process started with its own PYTHONPATH (tests set it to the checkout) gets
    this folder first on it too"""
    import os
    import subprocess
    here = os.path.dirname(os.path.abspath(__file__))
    real_init = subprocess.Popen.__init__

    def __init__(self, *args, env=None, **kwargs):
        if env is not None:
            paths = env.get("PYTHONPATH", "").split(os.pathsep)
            if here not in paths:
                env = dict(env, PYTHONPATH=os.pathsep.join([here] + [p for p in paths if p]))
        real_init(self, *args, env=env, **kwargs)
    subprocess.Popen.__init__ = __init__


_keep_in_children()
'''

_PLUGIN = r'''
import os

_passed = []


def pytest_runtest_makereport(item, call):
    if call.when == "call" and call.excinfo is None:
        if item.get_closest_marker("needs_no_compiler") is None:
            _passed.append(item.nodeid)


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["TORCHC_NO_COMPILER_OUT"], "w") as f:
        f.write("".join(n + "\n" for n in _passed))
'''


def main(argv):
    if not argv:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory(prefix="torchc-nocompiler-") as d:
        with open(os.path.join(d, "sitecustomize.py"), "w") as f:
            f.write(_SITECUSTOMIZE)
        with open(os.path.join(d, "torchc_no_compiler_plugin.py"), "w") as f:
            f.write(_PLUGIN)
        out = os.path.join(d, "passed.txt")
        env = dict(os.environ, TORCHC_NO_COMPILER_OUT=out,
                   PYTHONPATH=os.pathsep.join(p for p in (d, ROOT, os.environ.get("PYTHONPATH")) if p))
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "torchc_no_compiler_plugin", *argv], cwd=ROOT, env=env)
        passed = open(out).read().split() if os.path.exists(out) else None
    if passed is None:
        sys.exit("no_compiler_check: pytest did not finish")
    for n in passed:
        print("passes without the compiler:", n)
    print(f"no_compiler_check: {len(passed)} test(s) pass without the compiler and are not marked "
          "needs_no_compiler")
    return 1 if passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
