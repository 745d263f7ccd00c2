"""Review round 5: defects found in this session's merges, each a differential test against
eager with graph/break counts asserted."""
import importlib
import sys
import textwrap

import pytest
import torch

import torchc


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    root = tmp_path_factory.mktemp("review5")
    files = {
        "rv5pkg/__init__.py": "",
        "rv5pkg/sub/__init__.py": "",
        # a module that binds its own last name: `import rv5pkg.sub.shadow as s` must give
        # the module (IMPORT_FROM sub from rv5pkg, then shadow from rv5pkg.sub), not this 5
        "rv5pkg/sub/shadow.py": "shadow = 5\nsub = 6\ndef g(x):\n    return x + 7\n",
        "rv5pkg/mod.py": textwrap.dedent("""
            import torch

            def alias_chain(x):
                import rv5pkg.sub.shadow as s
                return s.g(x) * 2, s

            def alias_two(x):
                import rv5pkg.sub as s
                return x + 1, s

            def helper(x):
                import rv5pkg.sub.shadow as s
                return s.g(x)

            def alias_inlined(x):
                return helper(x) * 3
            """),
    }
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    sys.path.insert(0, str(root))
    try:
        mod = importlib.import_module("rv5pkg.mod")
        importlib.import_module("rv5pkg.sub.shadow")
        yield mod
    finally:
        sys.path.remove(str(root))
        for k in [k for k in sys.modules if k.startswith("rv5pkg")]:
            del sys.modules[k]


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
    elif isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b)
    else:
        assert a is b, (a, b)


def _run(fn, *args, graphs=1, breaks=0):
    ref = fn(*args)
    torchc.reset()
    cf = torchc.compile(fn)
    for _ in range(2):
        _same(cf(*args), ref)
    ex = torchc.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), ex.break_reasons
    return ex


X = torch.randn(3, 4)


# `import a.b.c as d` pushed a's var with a.b.c attached, and every IMPORT_FROM read from
# a.b.c: IMPORT_FROM b found a.b.c's own `b` (here the int 5: a wrong result) or broke
@pytest.mark.parametrize("name", ["alias_chain", "alias_two", "alias_inlined"])
def test_import_as_of_a_dotted_name(pkg, name):
    _run(getattr(pkg, name), X)


# sys.modules[name] = None blocks an import (eager raises ImportError: the idiom that hides an
# optional dependency); torchc took the None for a loaded module and ran the import's branch
@pytest.mark.allow_fallback
@pytest.mark.parametrize("blocked", ["rv5_blocked", "rv5pkg.blocked"])
def test_import_blocked_by_none_in_sys_modules(pkg, blocked):
    src = textwrap.dedent(f"""
        def f(x):
            y = x * 2
            try:
                import {blocked}
                return y + 1
            except ImportError:
                return y - 1
        """)
    ns = {}
    exec(compile(src, "<rv5>", "exec"), ns)
    sys.modules[blocked] = None
    try:
        ex = _run(ns["f"], X, graphs=0, breaks=1)
    finally:
        del sys.modules[blocked]
    assert "blocked by a None in sys.modules" in str(ex.break_reasons[0])
    # once the module is there, the import compiles (the entry was guarded)
    sys.modules[blocked] = sys.modules["rv5pkg.sub"]
    try:
        _run(ns["f"], X)
    finally:
        del sys.modules[blocked]
