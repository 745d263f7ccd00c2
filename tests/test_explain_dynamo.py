"""torchc.explain's counts mean torch._dynamo.explain's (issue 21): both run side by side on
the CPU. A graph is one compiled or run during the call, counted once however often it ran,
and only with tensor ops in it; Dynamo's break count is graph_count - 1 (-1 with no graph:
torchc says 0); break_reasons has one reason per graph a break ended (torchc: and per break
that ended a piece with no op, outside a callee). torchc adds the frames
it ran eagerly to the break count (they are listed in eager_frames), so (1 graph, 0 breaks)
means the call was captured whole."""
import dataclasses
import warnings

import pytest
import torch
import torch._dynamo as dynamo
import torch.nn as nn

import torchc


def whole(x):
    return (x.sin() + 1).cos()


def no_ops(x):
    return x


def no_tensor_ops(x, n=3):
    return [x] * n


def break_middle(x):
    y = x.sin()
    print(end="")  # a graph break
    return y.cos()


def break_first(x):  # the piece before the break has no op: no graph, no reason (Dynamo's too)
    print(end="")  # a graph break
    return x.sin().cos()


def break_last(x):  # the piece after the break has no op: one graph, and the break's reason
    y = x.sin().cos()
    print(end="")  # a graph break
    return y


def two_breaks(x):
    y = x.sin()
    print(end="")  # a graph break
    y = y.cos()
    print(end="")  # a graph break
    return y + 1


def helper_breaks(x):
    x = x * 2
    print(end="")  # a graph break
    return x + 1


def nested_break(x):  # the caller's graph ends at the call, the callee breaks in its own frame
    return helper_breaks(x.sin()).cos()


def loop_over_a_breaking_callee(x):  # the callee's graphs run three times: compiled once
    for _ in range(3):
        x = helper_breaks(x)
    return x


def same_callee_twice(x):  # the second call hits the callee's graphs
    print(end="")  # a graph break
    a = helper_breaks(x)
    b = helper_breaks(x)
    return a + b


def callee_recompiles(x):  # the callee meets a second shape: its graphs compile again
    print(end="")  # a graph break
    a = helper_breaks(x)
    b = helper_breaks(x[:1].sin())
    return a.sum() + b.sum()


@torch.compiler.disable
def _disabled(x):
    return x * 3


def calls_disabled(x):
    return _disabled(x.sin()).cos()


def data_dependent_branch(x):
    if x.sum() > 0:
        return x.sin()
    return x.cos()


def item(x):
    n = x.sum().item()
    return x + n


@dataclasses.dataclass
class _Out:
    a: torch.Tensor
    b: torch.Tensor


def dataclass_after_break(x):  # its generated __init__ runs as a frame with no op: no graph
    y = x.sin()
    print(end="")  # a graph break
    return _Out(y, y.cos())


def generator(x):
    def g():
        yield x.sin()
        yield x.cos()
    return sum(g())


def in_place(x):
    x.add_(1)


def factory(x):  # torch.ones(3) folds into a constant: still a traced call, a graph
    return torch.ones(3)


def view(x):
    return x.view(-1)


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


class _MLPBreak(_MLP):
    def forward(self, x):
        y = self.l1(x)
        print(end="")  # a graph break
        return self.l2(y)


CASES = [whole, no_ops, no_tensor_ops, break_middle, break_first, break_last, two_breaks,
         nested_break, loop_over_a_breaking_callee, same_callee_twice, callee_recompiles, calls_disabled,
         data_dependent_branch, item, dataclass_after_break, generator, in_place, factory, view,
         _MLP, _MLPBreak]
# (graphs, breaks, reasons) Dynamo gives, checked below so that a change of Dynamo shows
EXPECTED = {"whole": (1, 0, 0), "no_ops": (0, 0, 0), "no_tensor_ops": (0, 0, 0),
            "break_middle": (2, 1, 1), "break_first": (1, 0, 0), "break_last": (1, 0, 1),
            "two_breaks": (3, 2, 2), "nested_break": (4, 3, 2),
            "loop_over_a_breaking_callee": (2, 1, 1), "same_callee_twice": (3, 2, 1),
            "callee_recompiles": (6, 5, 3),
            "calls_disabled": (2, 1, 1), "data_dependent_branch": (2, 1, 1), "item": (2, 1, 1),
            "dataclass_after_break": (2, 1, 1), "generator": (1, 0, 0), "in_place": (1, 0, 0),
            "factory": (1, 0, 0), "view": (1, 0, 0), "_MLP": (1, 0, 0), "_MLPBreak": (2, 1, 1)}


# torchc also lists a break that ended a piece with no op (Dynamo compiles no graph there,
# and so has no reason to list)
TORCHC_REASONS = {"break_first": 1, "same_callee_twice": 2, "callee_recompiles": 4}


def _counts(ex):
    return ex.graph_count, max(ex.graph_break_count, 0), len(ex.break_reasons)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_counts_match_dynamo(case):
    fn = case() if isinstance(case, type) else case
    x = torch.randn(4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dynamo.reset()
        want = _counts(dynamo.explain(fn)(x.clone()))
        dynamo.reset()
    assert want == EXPECTED[case.__name__], want
    torchc.reset()
    cold = torchc.explain(fn)(x.clone())
    want = want[:2] + (TORCHC_REASONS.get(case.__name__, want[2]),)
    assert _counts(cold) == want, cold
    assert not cold.eager_frames, cold
    # explained again: every piece a cache hit; the same graphs, as Dynamo's explain (which
    # resets first) reports them again
    warm = torchc.explain(fn)(x.clone())
    assert _counts(warm) == want and warm.cache_hits == warm.pieces_run > 0, warm
    assert warm.op_count == cold.op_count, (cold, warm)
    with torch.no_grad():
        torchc.reset()
        got = torchc.compile(fn)(x.clone())
        ref = fn(x.clone())
    if isinstance(ref, torch.Tensor):
        torch.testing.assert_close(got, ref)


def test_cache_hits_and_empty_pieces_are_kept_apart():
    torchc.reset()
    ex = torchc.explain(loop_over_a_breaking_callee)(torch.randn(4, 4))
    # the caller: a piece before each call (no op of its own) and one after the loop; the
    # callee: two graphs, compiled on the first call and hit on the next two
    assert (ex.graph_count, ex.graph_break_count) == (2, 1), ex
    assert ex.cache_hits == 4 and ex.empty_pieces >= 2 and ex.pieces_run > ex.graph_count, ex
    assert ex.op_count == 2, ex
    assert sum(ex.compiles_per_code.values()) >= 3, ex.compiles_per_code


def callee_recompiles_view(x):
    print(end="")  # a graph break
    a = helper_breaks(x)
    b = helper_breaks(x[:1])
    return a.sum() + b.sum()


def test_recompile_in_the_call_counts_each_specialization():
    torchc.reset()
    ex = torchc.explain(callee_recompiles)(torch.randn(4, 4))
    loc = f"helper_breaks ({__file__}:{helper_breaks.__code__.co_firstlineno})"
    assert ex.compiles_per_code[loc] == 4, ex  # two pieces, two shapes
    # Dynamo: 6 graphs, one of them x[:1] alone before the second call; torchc replays a
    # view of an input after the graph, and that piece holds no other op: 5
    torchc.reset()
    ex = torchc.explain(callee_recompiles_view)(torch.randn(4, 4))
    assert (ex.graph_count, ex.graph_break_count) == (5, 4), ex


def loop_with_a_break(x):
    for i in range(3):
        x = x + 1
        print(end="")  # a graph break
    return x


def test_break_in_a_loop_where_dynamo_skips_the_frame():
    # Dynamo runs a frame with a break inside a loop eagerly (0 graphs); torchc resumes in
    # the loop: the piece before the loop's first break, and one per iteration's resume
    dynamo.reset()
    assert dynamo.explain(loop_with_a_break)(torch.randn(3)).graph_count == 0
    dynamo.reset()
    torchc.reset()
    ex = torchc.explain(loop_with_a_break)(torch.randn(3))
    assert (ex.graph_count, ex.graph_break_count, ex.op_count) == (3, 2, 3), ex


def _scaled(x):
    return x * 2 + 1


@pytest.mark.allow_fallback
def test_a_frame_run_eagerly_is_a_break_and_a_limit():
    # the recompile limit: the frame runs eagerly, its ops in no graph; that is not whole
    torchc.reset()
    cf = torchc.compile(_scaled, dynamic=False, recompile_limit=1)
    ex = torchc.explain(cf)(torch.randn(3))
    assert (ex.graph_count, ex.graph_break_count, ex.eager_frames) == (1, 0, []), ex
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ex = torchc.explain(cf)(torch.randn(5))
        assert (ex.graph_count, ex.graph_break_count) == (0, 1), ex
        assert len(ex.eager_frames) == 1 and len(ex.limits_hit) == 1 and "recompile limit" in ex.limits_hit[0], ex
        assert ex.break_reasons == ex.eager_frames and "Limits Hit:" in str(ex), ex
