"""Differential corpus: every program of tests/corpus_programs.py runs eagerly and compiled.

For each program: equal outputs (dtype, shape, values; identity of returned inputs and
storage sharing with the inputs), equal side effects (in-place updates of the inputs,
module parameters/buffers/attributes, printed output, extra Python state), the same
exception when eager raises, and the expected graph / graph-break counts from explain
(for the compiling call and for the cache hits after it). Then references: more calls
leave the reference counts of inputs, modules, parameters and returned values unchanged,
and the compiled function, the function/module and the inputs are freed after `del`.

Programs marked bug= are xfail(strict=True) (a wrong result, a missing exception...);
programs marked leak= keep their module alive: test_program_freed is xfail for them.
"""
import gc
import sys
import types
import weakref

import pytest
import torch

import torchc
from torchc import _C
from torchc._api import ExplainOutput

import corpus_programs as C

PROGRAMS = C.PROGRAMS


def _params(attr):
    out = []
    for p in PROGRAMS:
        marks = []
        if getattr(p, attr):
            marks.append(pytest.mark.xfail(strict=True, reason=f"BUG: {getattr(p, attr)}"))
        if p.breaks:  # declared breaks (asserted through explain): frames may run eagerly
            marks.append(pytest.mark.allow_fallback)
        if not p.graphs:  # a whole-frame fallback by declaration: nothing compiled
            marks.append(pytest.mark.no_compile)
        out.append(pytest.param(p, id=p.name, marks=marks))
    return out


@pytest.fixture(scope="module", autouse=True)
def _frozen_gc():
    # gc.collect() over all of torch's objects takes ~0.2 s; freeze what exists now so the
    # collections below only walk the objects these tests create
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


# ---- helpers --------------------------------------------------------------------------

def _leaves(obj, path=()):
    if isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        for i, o in enumerate(obj):
            yield from _leaves(o, path + (i,))
    elif isinstance(obj, dict):
        for k, o in obj.items():
            yield from _leaves(o, path + (k,))
    else:
        yield path, obj


def _compare(got, want, tol, where="output"):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"{where}: expected a tensor, got {type(got)}"
        assert got.dtype == want.dtype, (where, got.dtype, want.dtype)
        assert got.shape == want.shape, (where, got.shape, want.shape)
        kw = {}
        if tol is not None:
            kw = dict(rtol=tol[0], atol=tol[1])
        elif want.dtype == torch.float32:
            kw = dict(rtol=2e-5, atol=2e-5)
        torch.testing.assert_close(got, want, equal_nan=True, msg=lambda m: f"{where}: {m}", **kw)
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want), f"{where}: {type(got)} vs {type(want)}"
        assert len(got) == len(want), f"{where}: length {len(got)} vs {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, tol, f"{where}[{i}]")
    elif isinstance(want, dict):
        assert type(got) is type(want) and got.keys() == want.keys(), where
        for k in want:
            _compare(got[k], want[k], tol, f"{where}[{k!r}]")
    elif isinstance(want, float) and want != want:
        assert isinstance(got, float) and got != got, where
    elif hasattr(want, "__dict__") and not isinstance(want, (type, types.FunctionType,
                                                               types.ModuleType)):
        # plain Python objects (configs, callables): same type, same attributes
        assert type(got) is type(want), f"{where}: {type(got)} vs {type(want)}"
        _compare(vars(got), vars(want), tol, f"{where}.__dict__")
    else:
        assert type(got) is type(want), f"{where}: {type(got)} vs {type(want)}"
        assert got == want, f"{where}: {got!r} vs {want!r}"


def _identity_signature(outs, args):
    """which returned tensors are input objects / share storage with inputs / repeat"""
    arg_leaves = [(path, a) for path, a in _leaves(args) if isinstance(a, torch.Tensor)]
    sig = []
    seen = {}
    for path, o in _leaves(outs):
        if not isinstance(o, torch.Tensor):
            continue
        is_arg = next((ap for ap, a in arg_leaves if a is o), None)
        shares = None
        if o.numel() > 0:
            ptr = o.untyped_storage().data_ptr()
            shares = next((ap for ap, a in arg_leaves
                           if a.numel() > 0 and a.untyped_storage().data_ptr() == ptr), None)
        first = seen.setdefault(id(o), path)
        sig.append((path, is_arg, shares, first))
    return sig


def _module_state(m):
    if m is None:
        return None
    state = {k: v.detach().clone() for k, v in m.state_dict().items()}
    attrs = {}
    for name, sub in m.named_modules():
        for k, v in vars(sub).items():
            if not k.startswith("_") and isinstance(v, (int, float, str, bool, tuple, list)):
                attrs[f"{name}.{k}"] = v
    return state, attrs


def _run(p, fn, args, compiled, capsys):
    """calls fn p.calls times; returns outputs, exception, printed text, explain outputs"""
    if p.reset:
        p.reset()
    capsys.readouterr()
    outs, exc, exs = [], None, []
    torch.manual_seed(99)
    with torch.set_grad_enabled(p.grad_mode()):
        for _ in range(p.calls):
            if compiled:
                _C.explain_start()
            out = None
            try:
                out = fn(*args)
            except Exception as e:  # noqa: BLE001 - compared with eager's
                exc = e
            finally:
                if compiled:
                    exs.append(ExplainOutput(_C.explain_stop(), out))
            if exc is not None:
                break
            outs.append(out)
    printed = capsys.readouterr().out
    state = p.state() if p.state else None
    return outs, exc, printed, exs, state


def _call_quiet(p, fn, args):
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001
        if p.raises is None or not isinstance(e, p.raises):
            raise
        return None


# ---- references ----------------------------------------------------------------------------

def _fresh_function(f):
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    g.__kwdefaults__ = f.__kwdefaults__
    g.__qualname__ = f.__qualname__
    return g


def _refcounted(objs):
    # skip objects whose count other code changes (None, bools, small ints, interned str)
    keep = []
    for o in objs:
        if o is None or isinstance(o, bool) or isinstance(o, torch.dtype):
            continue
        if isinstance(o, int) and -5 <= o <= 256:
            continue
        if isinstance(o, str):
            continue
        if isinstance(o, torch.device):
            continue
        keep.append(o)
    return keep


def _compare_outputs(p, outs_c, outs_e, args_c, args_e):
    assert len(outs_c) == len(outs_e)
    for i, (oc, oe) in enumerate(zip(outs_c, outs_e)):
        _compare(oc, oe, p.tol, f"call {i} output")
        assert _identity_signature(oc, args_c) == _identity_signature(oe, args_e), \
            f"call {i}: returned objects alias the inputs differently"


# ---- the differential test -------------------------------------------------------------

@pytest.mark.needs_no_compiler
def test_corpus_size():
    assert len(PROGRAMS) >= 150
    assert len({p.name for p in PROGRAMS}) == len(PROGRAMS)


@pytest.mark.parametrize("p", _params("bug"))
def test_program(p, capsys):
    fe, args_e = p.materialize()
    fc, args_c = p.materialize()
    mod_e = fe if p.module else None
    mod_c = fc if p.module else None

    outs_e, exc_e, printed_e, _, state_e = _run(p, fe, args_e, False, capsys)
    if p.raises is not None:
        assert isinstance(exc_e, p.raises), f"eager was expected to raise {p.raises}: {exc_e!r}"
    elif exc_e is not None:
        raise exc_e

    torchc.reset()
    target = fc if p.module else _fresh_function(fc)
    cf = torchc.compile(target)
    outs_c, exc_c, printed_c, exs, state_c = _run(p, cf, args_c, True, capsys)

    # results
    if exc_e is not None:
        assert exc_c is not None, f"eager raised {exc_e!r}, compiled did not"
        assert type(exc_c) is type(exc_e), (exc_c, exc_e)
        assert str(exc_e).splitlines()[0] in str(exc_c), (str(exc_c), str(exc_e))
    elif exc_c is not None:
        raise AssertionError(f"compiled raised, eager did not: {exc_c!r}") from exc_c
    _compare_outputs(p, outs_c, outs_e, args_c, args_e)

    # side effects
    _compare(list(args_c), list(args_e), p.tol, "inputs after the calls")
    if p.module:
        (sc, ac), (se, ae) = _module_state(mod_c), _module_state(mod_e)
        assert sc.keys() == se.keys()
        for k in se:
            _compare(sc[k], se[k], p.tol, f"module state {k}")
        assert ac == ae, "module attributes differ"
    assert printed_c == printed_e, "printed output differs"
    assert state_c == state_e, "Python state differs"

    # graph / break counts: the compiling call, then the cache hits
    ex = exs[0]
    got = (ex.graph_count, ex.graph_break_count)
    assert got == (p.graphs, p.breaks), \
        f"graphs/breaks {got}, expected {(p.graphs, p.breaks)}; reasons: {ex.break_reasons}"
    hits = [(e.graph_count, e.graph_break_count) for e in exs[1:]]
    # (a loop that breaks in each iteration: its variable is a dynamic int of the resume from
    # its second value on, so a later call runs that one entry for several iterations: fewer
    # distinct graphs and breaks, as many graphs per break)
    assert all(h == got or (h[1] < got[1] and h[0] - h[1] == got[0] - got[1]) for h in hits), \
        f"counts of the later calls (cache hits): {hits} vs {got}"
    if p.breaks == 0 and not p.reason:  # (a break at the edge of the only graph is no
        assert not ex.break_reasons           # graph break, as Dynamo counts; its reason is listed)
    if p.reason:
        assert any(p.reason in r for r in ex.break_reasons), ex.break_reasons

    box = [cf, target, args_c]
    del outs_c, outs_e, exs, ex, exc_c, exc_e, fe, fc, args_e, mod_e, mod_c, cf, target, args_c
    _check_references(p, box, capsys)


N_REPEAT = 20


def _check_references(p, box, capsys):
    """repeated calls keep reference counts; cf, target and the inputs are freed after"""
    cf, target, args = box
    box.clear()
    tracked = [a for _, a in _leaves(args) if isinstance(a, torch.Tensor)]
    tracked += [a for a in args if isinstance(a, (list, tuple))]
    if p.module:
        # a known leak (p.leak) holds the module: its own count is checked by test_program_freed
        tracked += ([] if p.leak else [target]) + list(target.parameters()) + list(target.buffers())
    if p.reset:
        p.reset()
    with torch.set_grad_enabled(p.grad_mode()):
        out = _call_quiet(p, cf, args)
        gc.collect()
        out_objs = _refcounted([o for _, o in _leaves(out)])
        before = [sys.getrefcount(o) for o in tracked]
        out_before = [sys.getrefcount(o) for o in out_objs]
        for _ in range(N_REPEAT):               # cache hits, fallbacks, breaks
            _call_quiet(p, cf, args)
        gc.collect()
        after = [sys.getrefcount(o) for o in tracked]
        out_after = [sys.getrefcount(o) for o in out_objs]
    capsys.readouterr()
    assert after == before, f"input/module reference counts changed: {before} -> {after}"
    assert out_after == out_before, \
        f"returned values' reference counts changed: {out_before} -> {out_after}"
    if p.leak:
        return  # known: checked by test_program_freed (xfail)
    refs = [weakref.ref(cf), weakref.ref(target)]
    refs += [weakref.ref(a) for _, a in _leaves(args) if isinstance(a, torch.Tensor)]
    del cf, target, args, tracked, out, out_objs
    gc.collect()
    alive = [r() for r in refs if r() is not None]
    assert not alive, f"not freed after del + gc: {[type(a).__name__ for a in alive]}"


@pytest.mark.parametrize("p", [pytest.param(p, id=p.name, marks=pytest.mark.xfail(
    strict=True, reason=f"BUG: {p.leak}")) for p in PROGRAMS if p.leak])
def test_program_freed(p):
    fn, args = p.materialize()
    target = fn if p.module else _fresh_function(fn)
    cf = torchc.compile(target)
    with torch.set_grad_enabled(p.grad_mode()):
        _call_quiet(p, cf, args)
    refs = [weakref.ref(cf), weakref.ref(target)]
    del cf, target, fn, args
    gc.collect()
    alive = [r() for r in refs if r() is not None]
    assert not alive, f"not freed after del + gc: {[type(a).__name__ for a in alive]}"


# ---- known bugs outside the per-program harness -----------------------------------------------

# fixed (was a known bug)
def test_bug_list_argument_length_is_guarded():
    def f(xs):
        acc = xs[0] * 0
        for t in xs:
            acc = acc + t
        return acc

    cf = torchc.compile(f)
    xs = [torch.ones(2), torch.ones(2)]
    torch.testing.assert_close(cf(xs), f(xs))
    xs.append(torch.ones(2))
    torch.testing.assert_close(cf(xs), f(xs))   # got 2s (stale entry), eager gives 3s


# ---- state that changes between calls: the guards must see it ----------------------------------

_G_TENSOR = torch.ones(2)
_G_SCALE = 2.0


def _uses_globals(x):
    return x * _G_SCALE + _G_TENSOR


def test_rebinding_between_calls_is_seen():
    global _G_TENSOR, _G_SCALE
    x = torch.zeros(2)
    cf = torchc.compile(_uses_globals)
    try:
        for t, k in [(torch.ones(2), 2.0), (torch.full((2,), 7.0), 2.0), (torch.ones(2), 5.0)]:
            _G_TENSOR, _G_SCALE = t, k
            torch.testing.assert_close(cf(x + 1), _uses_globals(x + 1))
        _G_TENSOR.fill_(3.0)                          # in place: a tensor input, read each call
        torch.testing.assert_close(cf(x + 1), _uses_globals(x + 1))
    finally:
        _G_TENSOR, _G_SCALE = torch.ones(2), 2.0

    def mk():
        k = 1.0

        def f(x):
            return x * k

        def setk(v):
            nonlocal k
            k = v
        return f, setk
    f, setk = mk()
    cf = torchc.compile(f)
    cf(torch.ones(2))
    setk(5.0)                                         # closure cell rebound
    torch.testing.assert_close(cf(torch.ones(2)), f(torch.ones(2)))

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.eps = 1.0
            self.register_buffer("b", torch.ones(2))

        def forward(self, x):
            return x * self.eps + self.b

    m = M()
    cm = torchc.compile(m)
    with torch.no_grad():
        cm(torch.ones(2))
        m.eps = 3.0                                   # module attribute changed
        torch.testing.assert_close(cm(torch.ones(2)), m(torch.ones(2)))
        m.b = torch.full((2,), 10.0)                  # buffer replaced
        torch.testing.assert_close(cm(torch.ones(2)), m(torch.ones(2)))
        m.train(False)                                # training flag
        torch.testing.assert_close(cm(torch.ones(2)), m(torch.ones(2)))
        M.forward = lambda self, x: x - 100           # class method replaced
        torch.testing.assert_close(cm(torch.ones(2)), m(torch.ones(2)))

    def g(xs):
        return xs[0] * xs[1]
    cg = torchc.compile(g)
    xs = [torch.ones(2), 3.0]
    cg(xs)
    xs[0], xs[1] = torch.full((2,), 5.0), 4.0         # list items replaced
    torch.testing.assert_close(cg(xs), g(xs))


def _helper_with_default(x, b=0.5):
    return x + b


def _calls_helper_with_default(x):
    return _helper_with_default(x)


def _helper_replaced(x):
    return x + 1


def _calls_helper_replaced(x):
    return _helper_replaced(x)


# fixed (was a known bug)
def test_bug_inlined_function_defaults_are_guarded():
    cf = torchc.compile(_calls_helper_with_default)
    x = torch.zeros(2)
    cf(x)
    old = _helper_with_default.__defaults__
    _helper_with_default.__defaults__ = (2.0,)
    try:
        torch.testing.assert_close(cf(x), _calls_helper_with_default(x))
    finally:
        _helper_with_default.__defaults__ = old


# fixed (was a known bug)
def test_bug_inlined_function_code_is_guarded():
    cf = torchc.compile(_calls_helper_replaced)
    x = torch.zeros(2)
    cf(x)
    old = _helper_replaced.__code__
    _helper_replaced.__code__ = (lambda x: x - 1).__code__
    try:
        torch.testing.assert_close(cf(x), _calls_helper_replaced(x))
    finally:
        _helper_replaced.__code__ = old
