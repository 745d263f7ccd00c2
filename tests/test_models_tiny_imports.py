"""Idioms of real model code, part two: imports inside traced functions (relative ones,
`from ..modeling_utils import PreTrainedModel` in transformers' output capturing, resolved
against the frame's package as eager resolves them, their sys.modules entry guarded) and
item assignment to a ModelOutput (`outputs[key] = tuple(...)`). Differential tests against
eager with graph/break counts both ways."""
import dataclasses
import importlib
import sys
import textwrap

import pytest
import torch

import torchc

tf = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    root = tmp_path_factory.mktemp("imports")
    files = {
        "tcimp_pkg/__init__.py": "LOG = []\n",
        "tcimp_pkg/helpers.py": "def double(x):\n    return x * 2\n",
        "tcimp_pkg/sub/__init__.py": "",
        "tcimp_pkg/sub/sibling.py": "def triple(x):\n    return x * 3\n",
        "tcimp_pkg/sub/mod.py": textwrap.dedent("""
            def rel_function(x):
                from ..helpers import double
                return double(x) + 1

            def rel_module(x):
                from .. import helpers
                from . import sibling
                return helpers.double(x) + sibling.triple(x)

            def abs_function(x):
                from tcimp_pkg.helpers import double
                import tcimp_pkg.sub.sibling
                return double(x) - tcimp_pkg.sub.sibling.triple(x)

            def not_loaded(x):
                y = x + 1
                from .late import late_fn
                return late_fn(y)

            def submodule_not_loaded(x):
                from . import late2
                return late2.COUNT * x + late2.fn(x)

            def absolute_not_loaded(x):
                import tcimp_pkg.late3
                return tcimp_pkg.late3.fn(x)

            def import_fails(x):
                try:
                    import tcimp_no_such_module_xyz  # noqa: F401
                    return x + 1
                except ImportError:
                    return x - 1
            """),
        "tcimp_pkg/sub/late.py": "def late_fn(x):\n    return x.cos()\n",
        # module bodies with a side effect: run once, where eager runs them
        "tcimp_pkg/sub/late2.py": "import tcimp_pkg\ntcimp_pkg.LOG.append('late2')\nCOUNT = 3\n"
                                  "def fn(x):\n    return x.sin()\n",
        "tcimp_pkg/late3.py": "import tcimp_pkg\ntcimp_pkg.LOG.append('late3')\ndef fn(x):\n    return x.exp() - 1\n",
        # a top-level module named like the package's own: a relative import must not find it
        "helpers.py": "def double(x):\n    return x * 100\n",
    }
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    sys.path.insert(0, str(root))
    try:
        import helpers  # noqa: F401 - the decoy, loaded
        mod = importlib.import_module("tcimp_pkg.sub.mod")
        importlib.import_module("tcimp_pkg.sub.sibling")
        yield mod
    finally:
        sys.path.remove(str(root))
        for k in [k for k in sys.modules if k == "helpers" or k.startswith("tcimp_pkg")]:
            del sys.modules[k]


def _run(fn, *args, graphs=1, breaks=0):
    ref = fn(*args)
    torchc.reset()
    cf = torchc.compile(fn)
    for _ in range(2):
        torch.testing.assert_close(cf(*args), ref)
    ex = torchc.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), ex.break_reasons
    return ex


X = torch.randn(3, 4)


@pytest.mark.parametrize("name", ["rel_function", "rel_module", "abs_function"])
def test_import_inside_traced_code(pkg, name):
    _run(getattr(pkg, name), X)


def test_relative_import_is_not_a_top_level_module(pkg):
    assert sys.modules["helpers"].double(X).equal(X * 100)
    _run(pkg.rel_function, X)  # x * 2 + 1, not the decoy's x * 100


def _graphs_of(ex, where):
    """graphs compiled for code in `where`: the import machinery may run Python finders of the
    environment (a virtualenv's, setuptools' _distutils_hack) that torchc sees as frames too"""
    return sum(n for k, n in ex.compiles_per_code.items() if where in k)


def test_import_of_a_module_not_loaded_is_done_at_capture(pkg):
    # as Dynamo does: the import runs at capture (where eager runs it), then the module is a
    # loaded one: one graph with late_fn inlined (it was a whole-frame fallback: x + 1 eager)
    assert "tcimp_pkg.sub.late" not in sys.modules
    f = pkg.not_loaded
    torchc.reset()
    ex = torchc.explain(f)(X)
    assert "tcimp_pkg.sub.late" in sys.modules
    assert ex.graph_break_count == 0 and ex.graph_count == _graphs_of(ex, "tcimp_pkg") == 1, (ex.break_reasons, ex.compiles_per_code)
    assert ex.op_count == 2
    torch.testing.assert_close(ex.result, f(X))
    torch.testing.assert_close(torchc.compile(f)(X), f(X))


@pytest.mark.parametrize("name,mod,log,ops", [("submodule_not_loaded", "tcimp_pkg.sub.late2", "late2", 3),
                                              ("absolute_not_loaded", "tcimp_pkg.late3", "late3", 2)])
def test_module_body_runs_once_as_eager(pkg, name, mod, log, ops):
    import tcimp_pkg
    assert mod not in sys.modules
    torchc.reset()
    f = getattr(pkg, name)
    cf = torchc.compile(f)
    out = [cf(X) for _ in range(3)]
    assert tcimp_pkg.LOG.count(log) == 1  # eager: the body runs at the first import only
    for o in out:
        torch.testing.assert_close(o, f(X))
    ex = torchc.explain(f)(X)  # loaded now: no finder runs
    assert (ex.graph_count, ex.graph_break_count, ex.op_count) == (1, 0, ops), ex.break_reasons


@pytest.mark.no_compile
def test_import_that_raises_runs_as_eager(pkg):
    f = pkg.import_fails
    torchc.reset()
    ex = torchc.explain(f)(X)
    torch.testing.assert_close(ex.result, X - 1)
    assert any("raised ModuleNotFoundError" in r for r in ex.break_reasons), ex.break_reasons
    assert "tcimp_no_such_module_xyz" not in sys.modules
    torch.testing.assert_close(torchc.compile(f)(X), X - 1)


@dataclasses.dataclass
class Out(tf.utils.ModelOutput):
    logits: torch.Tensor = None
    hidden_states: tuple = None
    attentions: tuple = None


def f_setitem(x):
    o = Out(logits=x * 2)
    o["hidden_states"] = (x + 1, x + 2)
    o["logits"] = o.logits - 1  # a field holding a value
    return o


def f_setitem_reorder(x):
    o = Out(hidden_states=(x + 1,))
    o["logits"] = x * 2  # eager: joins the dict after hidden_states
    return o


def _same_output(a, b):
    assert type(a) is type(b) and list(a.keys()) == list(b.keys())
    for u, v in zip(a.to_tuple(), b.to_tuple()):
        torch.testing.assert_close(u, v)


def test_model_output_setitem():
    ref = f_setitem(X)
    torchc.reset()
    _same_output(torchc.compile(f_setitem)(X), ref)
    ex = torchc.explain(f_setitem)(X)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons


def test_model_output_setitem_out_of_field_order():
    ref = f_setitem_reorder(X)
    assert list(ref.keys()) == ["hidden_states", "logits"]
    torchc.reset()
    _same_output(torchc.compile(f_setitem_reorder)(X), ref)
    ex = torchc.explain(f_setitem_reorder)(X)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
