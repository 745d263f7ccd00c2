"""Real programs captured whole (issue 21, round pyobj): ints that change every call (automatic
dynamic ints), builtin exceptions raised in compiled code, DELETE_GLOBAL, and the clean
fallbacks of gen.send / except*. Each test compares with eager and counts torchc's compiles
and fallbacks, so a silent fallback or a recompile per call fails it."""
import copy

import pytest
import torch

import torchc
from conftest import assert_same, captured_whole


def counts():
    s = torchc._C.stats()
    return s.get("compiles", 0), s.get("fallbacks", 0) + s.get("limit_fallbacks", 0)


# ---- 1. automatic dynamic ints: a changed int recompiles once, as a graph input ------------

class Stepper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.step = 0

    def forward(self, x):
        self.step += 1
        return self.lin(x) * self.step - self.step // 3


def test_module_step_counter_recompiles_once():
    m = Stepper()
    ref = copy.deepcopy(m)
    cm = torchc.compile(m)
    x = torch.randn(2, 4)
    for _ in range(7):
        assert_same(cm(x), ref(x))
    assert m.step == ref.step == 7
    c, fb = counts()
    assert c == 2 and fb == 0, (c, fb)  # the first value specialized, then one dynamic entry


class HelperStepper(Stepper):
    def scaled(self, y, s):
        return y * s + 1

    def forward(self, x):
        self.step += 1
        return self.scaled(self.lin(x), self.step)


def test_step_passed_to_an_inlined_method_stays_dynamic():
    m = HelperStepper()
    ref = copy.deepcopy(m)
    cm = torchc.compile(m)
    x = torch.randn(2, 4)
    for _ in range(5):
        assert_same(cm(x), ref(x))
    c, fb = counts()
    assert c == 2 and fb == 0, (c, fb)


COUNTER = 0


def bump(x):
    global COUNTER
    COUNTER += 1
    return x + COUNTER * 2


def test_global_counter_recompiles_once():
    global COUNTER
    COUNTER = 0
    cf = torchc.compile(bump)
    x = torch.randn(3)
    for i in range(1, 7):
        assert_same(cf(x), x + i * 2)
        assert COUNTER == i
    c, fb = counts()
    assert c == 2 and fb == 0, (c, fb)


def scale(x, k):
    return x * k + (k - 1) % 4


def test_int_argument_dynamic_after_one_change():
    cf = torchc.compile(scale)
    x = torch.randn(2, 3)
    for k in (2, 3, 9, -5, 0, 1 << 40):
        assert_same(cf(x, k), scale(x, k))
    c, fb = counts()
    assert c == 2 and fb == 0, (c, fb)
    torchc.reset()
    ex = torchc.explain(scale)(x, 7)
    ex = torchc.explain(scale)(x, 8)  # (explain compiles anew: specialized at 7, not reused)
    assert captured_whole(ex)


def test_dynamic_true_int_arguments_from_the_first_call():
    cf = torchc.compile(scale, dynamic=True)
    x = torch.randn(5)
    for k in (2, 3, 9):
        assert_same(cf(x, k), scale(x, k))
    c, fb = counts()
    assert c == 1 and fb == 0, (c, fb)


def test_explain_lists_one_recompile():
    ef = torchc.explain(torchc.compile(scale))
    x = torch.randn(4)
    for k in range(2, 8):
        ex = ef(x, k)
    assert captured_whole(ex)
    assert_same(ex.result, scale(x, 7))
    c, _ = counts()
    assert c == 2


def test_int_flowing_into_a_shape_keeps_specializing():
    def f(x, k):
        return x.reshape(k, -1) * k
    cf = torchc.compile(f)
    x = torch.randn(24)
    for k in (2, 3, 4, 6):
        assert_same(cf(x, k), f(x, k))
    c, fb = counts()
    assert c == 4 and fb == 0, (c, fb)


def test_int_in_a_branch_and_other_types():
    def f(x, k):
        y = x * k
        if k > 4:
            y = y + 1
        return y
    cf = torchc.compile(f)
    x = torch.randn(3)
    for k in (1, 2, 7, 8, True, 2.5, 3):
        assert_same(cf(x, k), f(x, k))
    assert counts()[1] == 0


@pytest.mark.parametrize("dt", [torch.int32, torch.bool, torch.float16, torch.uint8])
def test_dynamic_int_with_tensors_of_other_dtypes(dt):
    def f(x, s, k):
        return x + k, x * k, s + k, k * s * x
    cf = torchc.compile(f)
    x = torch.arange(6).to(dt)
    s = torch.tensor(3, dtype=torch.int32)  # a 0-d int tensor: eager keeps int32 with a Python int
    for k in (2, 3, 5):
        assert_same(cf(x, s, k), f(x, s, k))
    assert counts()[1] == 0


# ---- 2. builtin exceptions raised in compiled code ------------------------------------------

def raising(x, log):
    y = x.sin() + 1
    log.append(y.shape[0])
    if x.shape[0] == 3:
        raise ValueError("bad rows: %d" % x.shape[0])
    return y


def test_raise_after_side_effects_is_eager_exception():
    want_log, got_log = [], []
    x = torch.randn(3, 2)
    with pytest.raises(ValueError) as want:
        raising(x, want_log)
    cf = torchc.compile(raising)
    for _ in range(2):
        with pytest.raises(ValueError) as got:
            cf(x, got_log)
        assert str(got.value) == str(want.value) and type(got.value) is ValueError
        assert got.value.__traceback__.tb_next is not None  # raised from the user's line
    assert got_log == want_log * 2
    c, fb = counts()
    assert c >= 1 and fb == 0
    assert_same(cf(torch.ones(2, 2), got_log), torch.ones(2, 2).sin() + 1)


# (defined from source: pytest rewrites the assert statements of a test module)
_ASSERTS = """
def needs_matrix(x):
    assert x.dim() == 2, "needs a matrix"
    return x * TABLE["b"]

def needs_vector(x):
    assert x.dim() == 1
    return x
"""
_asserts = {"TABLE": {"a": 2}}
exec(compile(_ASSERTS, __file__ + "<asserts>", "exec"), _asserts)


def test_failing_assert_and_key_error():
    f, g = _asserts["needs_matrix"], _asserts["needs_vector"]
    for fn, exc in ((f, KeyError), (f, AssertionError), (g, AssertionError)):
        x = torch.randn(2, 2) if exc is KeyError else torch.randn(2, 2, 2)
        with pytest.raises(exc) as want:
            fn(x)
        torchc.reset()
        with pytest.raises(exc) as got:
            torchc.compile(fn)(x)
        assert type(got.value) is type(want.value) and got.value.args == want.value.args
        c, fb = counts()
        assert c >= 1 and fb == 0, (fn.__name__, c, fb)


def test_raise_caught_in_the_same_function_is_one_graph():
    def f(x, n):
        try:
            if n > 2:
                raise ValueError("big")
            y = x + 1
        except ValueError:
            y = x - 1
        try:
            v = {"k": 1}["missing"]
        except KeyError:
            v = 5
        return y * v

    x = torch.randn(4)
    for n in (1, 3):
        torchc.reset()
        ex = torchc.explain(f)(x, n)
        assert captured_whole(ex), ex
        assert_same(ex.result, f(x, n))


def test_raise_from_none():
    def f(x, d):
        y = x * 2
        if "k" not in d:  # (a raise inside an except clause still runs the frame eagerly)
            raise ValueError("no k") from None
        return y + d["k"]

    x = torch.randn(3)
    with pytest.raises(ValueError) as want:
        f(x, {})
    with pytest.raises(ValueError) as got:
        torchc.compile(f)(x, {})
    assert str(got.value) == str(want.value)
    assert got.value.__cause__ is None and got.value.__suppress_context__
    assert counts()[1] == 0


def _check_positive(t):
    if t.shape[0] < 2:
        raise RuntimeError("too short")
    return t * 2


def test_raise_in_an_inlined_helper():
    def f(x):
        y = x.cos()
        return _check_positive(y) + 1

    cf = torchc.compile(f)
    x = torch.randn(3)
    assert_same(cf(x), f(x))
    with pytest.raises(RuntimeError, match="too short"):
        cf(torch.randn(1))
    assert counts()[1] == 0


# ---- 3. DELETE_GLOBAL, gen.send, except* ---------------------------------------------------

def drop_global(x):
    global SCRATCH
    y = x * SCRATCH
    del SCRATCH
    return y


@pytest.mark.allow_fallback  # the call with the global unbound runs eagerly (NameError)
def test_delete_global_is_replayed():
    global SCRATCH
    cf = torchc.compile(drop_global)
    x = torch.randn(3)
    SCRATCH = 3
    ex = torchc.explain(cf)(x)
    assert captured_whole(ex)
    assert_same(ex.result, x * 3)
    assert "SCRATCH" not in globals()
    with pytest.raises(NameError):
        drop_global(x)
    with pytest.raises(NameError):
        cf(x)
    SCRATCH = 4
    assert_same(cf(x), x * 4)
    assert "SCRATCH" not in globals()


def _accumulate():
    total = 0
    while True:
        v = yield total
        total = total + v


@pytest.mark.allow_fallback  # early(): the frame runs eagerly (eager's TypeError)
def test_generator_send_is_captured():
    def f(x):
        g = _accumulate()
        next(g)
        a = g.send(x)
        return a + g.send(x * 2)

    x = torch.randn(3)
    ex = torchc.explain(f)(x)
    assert captured_whole(ex)
    assert_same(ex.result, f(x))

    def early(x):  # a value sent to a just-started generator: eager's TypeError
        g = _accumulate()
        return g.send(x)

    with pytest.raises(TypeError) as want:
        early(x)
    with pytest.raises(TypeError) as got:
        torchc.compile(early)(x)
    assert str(got.value) == str(want.value)


@pytest.mark.allow_fallback
def test_except_star_falls_back_with_a_reason():
    def h(x):
        try:
            raise ExceptionGroup("eg", [ValueError("v"), TypeError("t")])
        except* ValueError:
            y = x + 1
        except* TypeError:
            y = x + 2
        return y

    def k(x):  # except* around code that raises nothing: captured
        try:
            y = x + 1
        except* ValueError:
            y = x + 2
        return y * 3

    x = torch.randn(3)
    ex = torchc.explain(h)(x)
    assert_same(ex.result, h(x))
    assert ex.break_reasons or ex.eager_frames
    torchc.reset()
    ex = torchc.explain(k)(x)
    assert captured_whole(ex)
    assert_same(ex.result, k(x))
