"""The differential corpus: small programs (functions or nn.Modules) with their inputs and
the number of graphs / graph breaks torchc.explain reports for them today.

Each entry is registered with @case(graphs, breaks, args) (a function) or
@module_case(graphs, breaks, args) (an nn.Module class, built with no arguments unless
factory= is given). args is a callable returning a fresh tuple of inputs (called under a
fixed seed, so two calls give equal inputs). tests/test_corpus.py runs every entry eagerly
and compiled and compares outputs, in-place side effects, module state, printed output and
the explain() counts.

Options:
  bug=     a wrong result / crash found in torchc: test_program is xfail(strict=True)
  leak=    a reference leak found in torchc: test_program_references is xfail(strict=True)
  raises=  the exception type eager raises (compiled must raise the same)
  tol=     (rtol, atol) for float comparisons
  grad=    run with grad mode on (default: torch.no_grad() for modules, grad mode on for
           functions, whose inputs never require grad)
  state=   a callable returning extra Python state to compare (globals), reset= one that
           resets it before each run
  reason=  a substring that must appear in the break reasons (documents why it breaks)
  calls=   how many calls per run (default 2: a compile, then a cache hit)

Counts are torchc's *current* behaviour: a whole-frame fallback shows graph_count 0 and
graph_break_count >= 1; every segment around a graph break (even an empty one) is a graph;
frames called from eagerly run code (resume functions, inner functions) count too.
"""
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

PROGRAMS = []


@dataclass
class Program:
    name: str
    fn: Any                       # a function, or a module factory (module=True)
    args: Callable[[], tuple]
    graphs: int
    breaks: int
    module: bool = False
    bug: Optional[str] = None
    leak: Optional[str] = None    # a reference leak: test_program_references is xfail
    raises: Any = None
    tol: Optional[tuple] = None
    grad: Optional[bool] = None
    state: Optional[Callable[[], Any]] = None
    reset: Optional[Callable[[], None]] = None
    reason: Optional[str] = None
    calls: int = 2
    tags: tuple = field(default_factory=tuple)

    def __repr__(self):
        return f"Program({self.name})"

    def materialize(self):
        """(fresh function or module, fresh inputs), identical on every call (fixed seeds)"""
        torch.manual_seed(1234)
        args = self.args()
        fn = self.fn
        if self.module:
            torch.manual_seed(4321)
            fn = self.fn()
        return fn, args

    def grad_mode(self):
        """the grad mode it runs under (grad=, else off for modules, on for functions)"""
        return self.grad if self.grad is not None else not self.module


def _register(p):
    assert all(q.name != p.name for q in PROGRAMS), p.name
    PROGRAMS.append(p)


def case(graphs, breaks, args, **kw):
    def deco(fn):
        _register(Program(fn.__name__, fn, args, graphs, breaks, **kw))
        return fn
    return deco


def module_case(graphs, breaks, args, factory=None, **kw):
    def deco(cls):
        _register(Program(cls.__name__, factory or cls, args, graphs, breaks, module=True, **kw))
        return cls
    return deco


# ---- input helpers -------------------------------------------------------------------

def R(*s, dtype=torch.float32):
    return torch.randn(*s, dtype=dtype)


def D(*s):
    return torch.randn(*s, dtype=torch.float64)


def NC(*s):
    """non-contiguous: the transpose of a contiguous tensor (last two dims swapped)"""
    return torch.randn(*s[:-2], s[-1], s[-2]).transpose(-1, -2)


def ST(*s):
    """non-contiguous: every other element of the last dim"""
    return torch.randn(*s[:-1], 2 * s[-1])[..., ::2]


def EXP(*s):
    """an expanded (stride 0) tensor"""
    return torch.randn(*s[:-1], 1).expand(*s)


def I(*s, dtype=torch.int64):
    return torch.randint(-8, 8, s, dtype=dtype)


def B(*s):
    return torch.rand(s) > 0.5


# ======================================================================================
# A. locals, globals, attributes, closures
# ======================================================================================

SCALE = 2.5
GT = torch.linspace(-1.0, 1.0, 8)
FLAG_ON = True
FLAG_OFF = False
MODE = "gelu"
SIZES = (2, 4)


def helper_double(x):
    return x * 2


def helper_affine(x, w, b=0.5):
    return x * w + b


@case(1, 0, lambda: (R(3, 8),))
def fast_locals_chain(x):
    a = x
    b = a * 2
    c = b + a
    a = c - b
    return a * c


@case(1, 0, lambda: (R(3, 8),))
def global_float_constant(x):
    return x * SCALE + SCALE


@case(1, 0, lambda: (R(3, 8),))
def global_tensor_read(x):
    return x + GT


@case(1, 0, lambda: (R(3, 8),))
def global_function_inlined(x):
    return helper_double(x) + helper_affine(x, 3.0)


@case(1, 0, lambda: (R(8, 8),))
def global_tuple_constant(x):
    return x.reshape(SIZES[0], SIZES[1], 8).sum(1)


@case(1, 0, lambda: (R(5),))
def module_attribute_constants(x):
    return x * math.pi + torch.pi * 0 + math.e


def _make_closure(k):
    def closure_const(x):
        return x * k + k
    return closure_const


case(1, 0, lambda: (R(6),))(_make_closure(1.5))


def _make_tensor_closure():
    t = torch.arange(6.0)

    def closure_tensor(x):
        return x - t
    return closure_tensor


case(1, 0, lambda: (R(6),))(_make_tensor_closure())


def _make_fn_closure(act):
    def closure_function(x):
        return act(x) + 1
    return closure_function


case(1, 0, lambda: (R(6),))(_make_fn_closure(torch.tanh))


def _make_nested_closure(a):
    def mid(b):
        def nested_closure(x):
            return x * a + b
        return nested_closure
    return mid(2.0)


case(1, 0, lambda: (R(6),))(_make_nested_closure(3.0))


@case(1, 0, lambda: (R(6),))  # a closure of constants (sym_call.c MAKE_FUNCTION)
def local_def_closure(x):
    k = 2.0

    def g(y):
        return y * k
    return g(x) + 1


@case(1, 0, lambda: (R(6),))
def local_lambda(x):
    f = lambda y: y.relu() * 2  # noqa: E731
    return f(x)


COUNTER = [0]


def _counter_state():
    return COUNTER[0]


def _counter_reset():
    COUNTER[0] = 0


CALLS = 0


def _calls_state():
    return CALLS


def _calls_reset():
    global CALLS
    CALLS = 0


@case(1, 0, lambda: (R(4),), state=_calls_state, reset=_calls_reset)  # STORE_GLOBAL replayed after the graph
def store_global(x):
    global CALLS
    CALLS += 1
    return x * 2


@case(1, 0, lambda: (R(4),))
def delete_local(x):
    y = x * 2
    z = y + 1
    del y
    return z


# ======================================================================================
# B. calls: keywords, defaults, *args, kw-only, nesting
# ======================================================================================

def _kw(x, scale=1.0, *, shift=0.0, act=None):
    y = x * scale + shift
    if act is not None:
        y = act(y)
    return y


def _varargs(x, *rest):
    for r in rest:
        x = x + r
    return x


def _returns_pair(x):
    return x + 1, x - 1


def _recursive(x, n):
    if n == 0:
        return x
    return _recursive(x * 2, n - 1)


def _kwargs_fn(x, **kw):
    return x * kw["k"]


@case(1, 0, lambda: (R(3, 4),))
def call_keywords(x):
    return torch.sum(x, dim=1, keepdim=True) + x.mean(dim=0, keepdim=True)


@case(1, 0, lambda: (R(3, 4),))
def call_defaults_and_kwonly(x):
    return _kw(x) + _kw(x, 2.0) + _kw(x, shift=1.0) + _kw(x, scale=0.5, act=torch.relu)


@case(1, 0, lambda: (R(3, 4), R(4)))
def call_varargs(x, y):
    return _varargs(x, y, y, 1.0) + _varargs(x)


@case(1, 0, lambda: (R(3, 4),))
def call_tuple_return_unpack(x):
    a, b = _returns_pair(x)
    return a * b


@case(1, 0, lambda: (R(3, 4),))
def call_nested(x):
    return helper_double(helper_affine(helper_double(x), 0.5, b=-1.0))


@case(1, 0, lambda: (R(3, 4),))
def call_recursive_constant_depth(x):
    return _recursive(x, 3)


@case(1, 0, lambda: (R(3, 4),))
def call_kwargs_function(x):
    return _kwargs_fn(x, k=3.0) + 1


@case(1, 0, lambda: (R(3, 4), R(4)))
def call_star_args(x, y):
    t = (x, y)
    return torch.add(*t)


@case(1, 0, lambda: (R(3, 4), R(4)))
def call_tensor_method_keywords(x, y):
    return x.add(y, alpha=2.0).clamp(min=-1.0, max=1.0).sub(other=y)


@case(1, 0, lambda: (R(3, 4),))
def call_functional_keywords(x):
    return F.gelu(x, approximate="tanh") + F.softmax(x, dim=-1) + F.silu(input=x)


@case(1, 0, lambda: (R(3, 4),))
def call_same_function_different_constants(x):
    return helper_affine(x, 1.0) + helper_affine(x, 2.0, 3.0) + helper_affine(x, w=-1.0, b=0.0)


# ======================================================================================
# C. tuples, lists, dicts, unpacking
# ======================================================================================

@case(1, 0, lambda: (R(4), R(4)))
def build_tuple_and_index(x, y):
    t = (x, y, x * y)
    return t[0] + t[-1] * t[1]


@case(1, 0, lambda: (R(4), R(4)))
def build_list_and_iterate(x, y):
    acc = x
    for t in [x, y, x - y]:
        acc = acc * 0.5 + t
    return acc


@case(1, 0, lambda: (R(4), R(4)))
def unpack_swap(x, y):
    a, b = x, y
    a, b = b, a
    a, b, c = a + 1, b * 2, a - b
    return a, b, c


@case(1, 0, lambda: ([R(3), R(3), R(3)],))
def list_argument(xs):
    return xs[0] * xs[1] + xs[2]


@case(1, 0, lambda: ((R(3), (R(3), 2.0)),))
def nested_tuple_argument(t):
    x, (y, k) = t
    return x * k + y


@case(1, 0, lambda: (R(4),))
def dict_literal(x):
    d = {"a": x, "b": x * 2}
    return d["a"] + d["b"]


@case(1, 0, lambda: (R(4),))
def star_unpack(x):
    a, *rest = (x, x * 2, x * 3)
    return a + rest[0] + rest[1]


@case(1, 0, lambda: (R(4),))
def list_constant_index(x):
    ks = [1.0, 2.0, 3.0]
    return x * ks[1] + ks[-1]


@case(1, 0, lambda: (R(4),))
def list_append(x):
    out = []
    for i in range(3):
        out.append(x * i)
    return out[0] + out[1] + out[2]


@case(1, 0, lambda: (R(4),))
def list_concat_unpack(x):
    a = [x, x + 1]
    b = [*a, x + 2]
    return tuple(b)


@case(1, 0, lambda: (R(4),))
def tuple_constant_slice(x):
    t = (1, 2, 3, 4)
    return x * t[1:3][0] + len(t[::2])


# ======================================================================================
# D. loops
# ======================================================================================

@case(1, 0, lambda: (R(3, 4),))
def loop_range(x):
    for i in range(4):
        x = x * 0.5 + i
    return x


@case(1, 0, lambda: (R(3, 4),))
def loop_range_step(x):
    acc = torch.zeros_like(x) if False else x * 0
    for i in range(10, 0, -3):
        acc = acc + x * i
    return acc


@case(1, 0, lambda: (R(3, 4), R(3, 4)))
def loop_tuple_of_tensors(x, y):
    acc = x * 0
    for t in (x, y, x * y):
        acc = acc + t.relu()
    return acc


@case(1, 0, lambda: (R(3, 4),))
def loop_nested(x):
    for i in range(3):
        for j in range(2):
            x = x + i * j
    return x


@case(1, 0, lambda: (R(3, 4),))
def loop_while(x):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    return x


@case(1, 0, lambda: (R(3, 4),))
def loop_break_continue(x):
    for i in range(10):
        if i % 2 == 0:
            continue
        if i > 6:
            break
        x = x + i
    return x


@case(1, 0, lambda: (R(3, 4),))
def loop_enumerate(x):
    for i, k in enumerate((1.0, 2.0, 3.0)):
        x = x * k + i
    return x


@case(1, 0, lambda: (R(3, 4), R(3, 4)))
def loop_zip(x, y):
    for a, b in zip((x, y), (1.0, 2.0)):
        x = x + a * b
    return x


@case(1, 0, lambda: (R(3, 4),))
def loop_reversed(x):
    for i in reversed(range(3)):
        x = x * 2 - i
    return x


@case(1, 0, lambda: ([R(3), R(3), R(3)],))
def loop_over_list_argument(xs):
    acc = xs[0] * 0
    for t in xs:
        acc = acc + t * t
    return acc


@case(1, 0, lambda: (R(4),))
def loop_long_unroll(x):
    for i in range(64):
        x = x + 0.01 * i
    return x


# ======================================================================================
# E. branches on Python constants
# ======================================================================================

@case(1, 0, lambda: (R(4), True))
def branch_on_bool_arg_true(x, flag):
    if flag:
        return x.relu()
    return x.tanh()


@case(1, 0, lambda: (R(4), False))
def branch_on_bool_arg_false(x, flag):
    if not flag:
        return x.relu()
    return x.tanh()


@case(1, 0, lambda: (R(4),))
def branch_on_globals(x):
    if FLAG_ON and not FLAG_OFF:
        x = x + 1
    if FLAG_OFF or MODE == "relu":
        x = x.relu()
    elif MODE == "gelu":
        x = F.gelu(x)
    else:
        x = x * 0
    return x


@case(1, 0, lambda: (R(4, 3),))
def branch_on_dim_and_size(x):
    if x.dim() == 2 and x.size(0) > 2:
        x = x.sum(0)
    if x.ndim == 1:
        x = x * 2
    return x


@case(1, 0, lambda: (D(4),))
def branch_on_dtype(x):
    if x.dtype == torch.float64:
        return x.float() * 2
    return x


@case(1, 0, lambda: (R(4), 3))
def branch_ternary_and_compare_chain(x, k):
    y = x * 2 if k > 2 else x * 3
    if 0 < k < 5:
        y = y + 1
    return y


@case(1, 0, lambda: (R(4), "b"))
def branch_on_string_in(x, mode):
    if mode in ("a", "b"):
        return -x
    if mode not in ("c",):
        return x
    return x * 0


@case(1, 0, lambda: (R(4),))
def branch_optional_default(x, y=None, scale=None):
    if y is None:
        y = x
    if scale is not None:
        y = y * scale
    return x + y


@case(1, 0, lambda: (R(4), 0, 2.5))
def branch_and_or_values(x, a, b):
    k = a or b
    j = a and b
    return x * k + j


# ======================================================================================
# F. comprehensions, f-strings, asserts
# ======================================================================================

@case(1, 0, lambda: (R(4),))
def list_comprehension(x):
    ys = [x * i for i in range(3)]
    return ys[0] + ys[1] + ys[2]


@case(1, 0, lambda: (R(4),))
def generator_sum(x):
    return sum(x * i for i in range(3))


@case(1, 0, lambda: (R(4),))
def fstring_unused(x):
    s = f"n={x.size(0)}"
    return x * len(s)


@case(1, 0, lambda: (R(4),), reason="print")
def fstring_print(x):
    print(f"dim={x.dim()} n={x.numel()}")
    return x + 1


@case(1, 0, lambda: (R(4),))
def assert_passes(x):
    assert x.dim() == 1
    assert x.size(0) == 4, "need 4"
    return x * 2


# a failing assert breaks at the raise (a break at the edge: the reason is listed), then
# raises eager's AssertionError (was: the frame ran eagerly, counted as a break)
@case(0, 0, lambda: (R(4),), raises=AssertionError, reason="AssertionError")
def assert_fails(x):
    assert x.dim() == 2, "need 2-d"
    return x * 2


@case(1, 0, lambda: (R(4),))
def set_literal(x):
    s = {1, 2, 2}
    return x * len(s)


# ======================================================================================
# G. is / in / not, isinstance, len, getattr, math, builtins
# ======================================================================================

@case(1, 0, lambda: (R(4), R(4)))
def is_and_is_not(x, y):
    a = 1.0 if x is y else 2.0
    b = 1.0 if x is not None else 2.0
    c = 3.0 if x is x else 4.0
    return x * a + y * b + c


@case(1, 0, lambda: (R(4),))
def not_of_constants(x):
    k = not 0
    j = not (1, 2)
    return x + k + j


@case(1, 0, lambda: (R(4),))
def isinstance_tensor(x):
    if isinstance(x, torch.Tensor):
        x = x * 2
    if isinstance(x, (list, tuple)):
        x = x * 0
    return x


@case(1, 0, lambda: (R(4), 3))
def isinstance_int(x, k):
    if isinstance(k, int):
        return x * k
    return x


@case(1, 0, lambda: (R(5, 3), [1, 2, 3]))
def len_of_things(x, lst):
    return x * len(x) + len(lst) + len((1, 2))


@case(1, 0, lambda: (R(4),))
def getattr_builtin(x):
    return x * getattr(math, "pi")


@case(1, 0, lambda: (R(4),))
def math_functions(x):
    return (x * math.sqrt(2.0) + math.log(3.0) + math.exp(0.5) + math.cos(0.3)
            + math.floor(2.7) + math.ceil(0.2) + math.tanh(0.1))


@case(1, 0, lambda: (R(4),))
def builtin_numeric(x):
    return x * max(2, 3) + min(1.0, 0.5) + abs(-2) + round(2.6) + int(3.9) + float(2)


@case(1, 0, lambda: (R(4), 3, 2.0))
def python_arithmetic(x, n, f):
    k = (n * 2 + 1) // 2 - n % 2 + n ** 2 - (n << 1) + (n >> 1) + (n & 1) + (n | 4) + (n ^ 2)
    return x * k + f / 4 - f


@case(1, 0, lambda: (R(4),))
def hasattr_builtin(x):
    if hasattr(x, "shape"):
        return x + 1
    return x


@case(1, 0, lambda: (R(4),))
def unary_minus_constant(x):
    k = -3
    return -x * k + -(-x)


# ======================================================================================
# H. tensor metadata and shape arithmetic
# ======================================================================================

@case(1, 0, lambda: (R(2, 3, 4),))
def shape_attribute(x):
    b, t, c = x.shape
    return x.reshape(b * t, c) * 2


@case(1, 0, lambda: (R(5),))
def shape_attribute_index(x):
    return x * x.shape[0]


@case(1, 0, lambda: (R(2, 3, 4),))
def size_arithmetic_view(x):
    b, t, c = x.size(0), x.size(1), x.size(-1)
    y = x * 2
    return y.view(b * t, c).sum(-1) + y.view(b, -1).mean()


@case(1, 0, lambda: (R(2, 3, 4),))
def size_full_unpack(x):
    b, t, c = x.size()
    return (x + 1).reshape(b, t * c)


@case(1, 0, lambda: (R(2, 3, 4),))
def dim_numel_ndim(x):
    return x * x.dim() + x.numel() + x.ndim + x.ndimension()


@case(1, 0, lambda: (R(2, 3),))
def dtype_device_attrs(x):
    y = x.to(x.device).to(x.dtype)
    if x.is_cuda:
        y = y * 0
    if x.dtype.is_floating_point:
        y = y + 1
    return y * 2


@case(1, 0, lambda: (R(2, 3, 4),))
def flatten_unsqueeze_squeeze(x):
    y = (x * 2).flatten(1)
    z = y.unsqueeze(1).unsqueeze(-1)
    return z.squeeze(-1).squeeze(1) + y


@case(1, 0, lambda: (R(2, 3, 4),))
def permute_transpose_then_reduce(x):
    y = x.permute(2, 0, 1) + 1
    z = y.transpose(0, 2).sum(0)
    return z * 2


@case(1, 0, lambda: (R(3, 1),))
def expand_explicit(x):
    return (x * 2).expand(3, 5) + (x + 1).expand(-1, 5)


@case(1, 0, lambda: (R(3, 4),))
def transpose_attr_T(x):
    return (x * 2).T + 1


@case(1, 0, lambda: (R(3, 4),))
def return_view_of_input(x):
    return x.view(-1)


@case(1, 0, lambda: (R(3, 4),))
def return_transposed_input(x):
    return x.t()


@case(1, 0, lambda: (NC(3, 4),))  # a contiguous copy in the graph (issue 26 item 9)
def contiguous_of_noncontiguous(x):
    return x.contiguous() * 2


@case(1, 0, lambda: (R(3, 4),))
def contiguous_noop_is_self(x):
    y = x.contiguous()
    return y * 2, y is x


@case(1, 0, lambda: (R(3, 4),))
def tensor_indexing(x):
    return x[0] + x[1]


@case(1, 0, lambda: (R(3, 4),))
def tensor_slicing_step(x):
    return x[:, ::2] * 2


# ======================================================================================
# I. user function and method inlining
# ======================================================================================

@case(1, 0, lambda: (R(4),))
def inline_two_levels(x):
    def_global = helper_affine
    return def_global(helper_double(x), helper_double(x))


@case(1, 0, lambda: (R(4),))
def inline_builtin_functional_module(x):
    act = F.relu
    return act(x) + torch.nn.functional.silu(x)


@case(1, 0, lambda: (R(4),))  # functools.partial made in the frame: obj_func.c
def inline_functools_partial(x):
    import functools
    f = functools.partial(helper_affine, w=2.0)
    return f(x)


GLOBAL_LAMBDA = lambda x: x.sigmoid() * 3  # noqa: E731


@case(1, 0, lambda: (R(4),))
def inline_global_lambda(x):
    return GLOBAL_LAMBDA(x) + GLOBAL_LAMBDA(x * 2)


def _with_try(x):
    try:
        return x * 2
    except RuntimeError:
        return x


@case(1, 0, lambda: (R(4),))
def inline_function_with_try(x):
    return _with_try(x) + 1


@case(1, 0, lambda: (R(4),))
def top_level_try(x):
    try:
        y = x * 2
    finally:
        pass
    return y


@case(1, 0, lambda: (R(4),))
def top_level_with_no_grad(x):
    with torch.no_grad():
        y = x * 2
    return y


def _gen(x):
    yield x
    yield x * 2


@case(1, 0, lambda: (R(4),))
def call_generator_function(x):
    a, b = _gen(x)
    return a + b


# ======================================================================================
# J. nn.Module
# ======================================================================================

# the cache entries of a forward that breaks with module-holding Python values live across
# the break (the called submodule, a loop over a ModuleList, a super() object) or that is
# split around an extern call (linear/matmul) hold a strong reference to the module: it is
# never freed (until torchc.reset())
# fixed: objects live across a break are re-read from the frame (sources), not held by the
# cache entry; these programs are now checked for being freed like the rest
MODULE_BREAK_LEAK = None
ATTR_WRITE_BREAK_LEAK = None

@module_case(1, 0, lambda: (R(4, 8),), factory=lambda: SequentialActivations().eval())
class SequentialActivations(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.ReLU(), nn.GELU(), nn.SiLU(), nn.Tanh(), nn.Sigmoid(),
                                  nn.Identity(), nn.Dropout(0.5))

    def forward(self, x):
        return self.body(x)


@module_case(1, 0, lambda: (R(4, 8),), factory=lambda: SequentialNormSoftmax().eval())
class SequentialNormSoftmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.LayerNorm(8), nn.Dropout(0.1), nn.Softmax(dim=-1))

    def forward(self, x):
        return self.body(x) * 8


@module_case(1, 0, lambda: (R(4, 8),))
class ModuleListLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.GELU(approximate="tanh")])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x) + x
        return x + self.layers[1](x) * len(self.layers)


@module_case(1, 0, lambda: (R(4, 8),))
class ModuleListEnumerate(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.ReLU(), nn.Tanh()])

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x) * (i + 1)
        return x


@module_case(1, 0, lambda: (R(4, 8),))
class ModuleDictIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.acts = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Tanh()})

    def forward(self, x):
        return self.acts["a"](x) + self.acts["b"](x)


class _Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.scale = nn.Parameter(torch.randn(d))
        self.register_buffer("shift", torch.randn(d))
        self.eps = 1e-5

    def forward(self, x):
        return x + F.silu(self.norm(x) * self.scale + self.shift)


@module_case(1, 0, lambda: (R(3, 5, 16),))
class NestedBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(_Block(16), _Block(16))
        self.final = nn.LayerNorm(16, elementwise_affine=False)

    def forward(self, x):
        return self.final(self.blocks(x))


@module_case(1, 0, lambda: (R(3, 16),))
class RMSNormModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(16) + 0.5)
        self.eps = 1e-6

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * self.weight


@module_case(1, 0, lambda: (R(3, 16),))
class MethodInlining(nn.Module):
    def __init__(self):
        super().__init__()
        self.alpha = 0.25

    def _mix(self, a, b):
        return a * self.alpha + b * (1 - self.alpha)

    def forward(self, x):
        return self._mix(x.relu(), self._mix(x, x.sigmoid()))


class _BaseAct(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = 2.0

    def forward(self, x):
        return x * self.k


@module_case(1, 0, lambda: (R(3, 4),))
class SuperForward(_BaseAct):
    def forward(self, x):
        return super().forward(x) + 1


@module_case(1, 0, lambda: (R(3, 4),))  # super(Cls, self) is inlined (3.11 CALL, 3.12 LOAD_SUPER_ATTR)
class SuperWithArgs(_BaseAct):
    def forward(self, x):
        return super(SuperWithArgs, self).forward(x).relu()


@module_case(1, 0, lambda: (R(3, 4),))
class InheritedForward(_BaseAct):
    pass


@module_case(1, 0, lambda: (R(3, 4),))
class BufferRead(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.randn(4))
        self.register_buffer("std", torch.rand(4) + 0.5)

    def forward(self, x):
        return (x - self.mean) / self.std


@module_case(1, 0, lambda: (R(3, 4),))
class BufferInplaceUpdate(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(4))
        self.momentum = 0.1

    def forward(self, x):
        self.running.mul_(1 - self.momentum).add_(x.mean(0) * self.momentum)
        return x - self.running


@module_case(1, 0, lambda: (R(3, 4),))
class AttributeCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls


# a property's getter is inlined
@module_case(1, 0, lambda: (R(3, 4),))
class PropertyAccess(nn.Module):
    @property
    def scale(self):
        return 3.0

    def forward(self, x):
        return x * self.scale


# the linear is an extern (ATen) node inside the one graph
@module_case(1, 0, lambda: (R(3, 4),))
class LinearLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 6)

    def forward(self, x):
        return F.gelu(self.fc(x)) * 2


@module_case(1, 0, lambda: (R(3, 4),), grad=True)  # training: forward + compiled backward (issue 22)
class ParametersWithGradMode(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x):
        return (x * self.w).relu()


@module_case(1, 0, lambda: (R(3, 4),), grad=True)
class NoParametersGradMode(nn.Module):
    def forward(self, x):
        return x.relu() * 2


@module_case(1, 0, lambda: (R(3, 8),), factory=lambda: DropoutTraining().train())  # mask drawn by ATen in the graph (issue 22)
class DropoutTraining(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(x * 2) + 1


@module_case(1, 0, lambda: (R(3, 4),))
class ModuleKwargsCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = _KwInner()

    def forward(self, x):
        return self.inner(x, scale=3.0) + self.inner(x)


class _KwInner(nn.Module):
    def forward(self, x, scale=1.0, shift=0.5):
        return x * scale + shift


def _hooked():
    m = HookedModule()
    m.act.register_forward_hook(lambda mod, inp, out: out * 2)
    return m


@module_case(1, 0, lambda: (R(3, 4),), factory=_hooked)  # forward hooks inlined (sym_call.c)
class HookedModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(x) + 1


@module_case(1, 0, lambda: (R(3, 4),))
class ModuleListAttributeOfFloats(nn.Module):
    def __init__(self):
        super().__init__()
        self.ks = [0.5, 1.5, 2.5]
        self.dims = (0, 1)

    def forward(self, x):
        for k in self.ks:
            x = x * k
        return x.sum(self.dims[1])


@module_case(1, 0, lambda: (R(2, 4, 8),))
class ReluInplaceModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.Sequential(nn.ReLU(inplace=True), nn.LayerNorm(8))

    def forward(self, x):
        return self.act(x * 2 - 1)


@module_case(1, 0, lambda: (R(2, 3, 8),))
class SoftmaxAttentionScores(nn.Module):
    def __init__(self):
        super().__init__()
        self.temperature = 8 ** 0.5
        self.sm = nn.Softmax(dim=-1)

    def forward(self, x):
        b, t, c = x.size()
        scores = (x * x.sum(1, keepdim=True)) / self.temperature
        return self.sm(scores).view(b, t * c)


@module_case(1, 0, lambda: (R(2, 3, 8),))
class AttentionWithMatmul(nn.Module):
    def forward(self, q):
        s = q @ q.transpose(-1, -2)
        return s.softmax(-1) @ q


# ======================================================================================
# K. in-place updates
# ======================================================================================

@case(1, 0, lambda: (R(3, 4), R(4)))
def inplace_augmented_on_input(x, y):
    x += y
    x *= 2
    x -= 1
    x /= 4
    return x.sum()


@case(1, 0, lambda: (R(3, 4),))
def inplace_method_chain(x):
    x.add_(1).mul_(2).clamp_(min=0.0)
    return x


@case(1, 0, lambda: (R(3, 4),))
def inplace_on_intermediate(x):
    y = x * 3
    y.relu_()
    y.sigmoid_()
    torch.relu(y)
    return y + 1


@case(1, 0, lambda: (R(3, 4),))
def inplace_functional_relu(x):
    h = x - 0.5
    F.relu(h, inplace=True)
    F.silu(x, inplace=True)
    return h, x


@case(1, 0, lambda: (R(3, 4), R(4), R(4)))
def inplace_copy_fill_zero(x, a, b):
    a.copy_(x.sum(0))
    b.fill_(2.5)
    x.zero_()
    return a + b


@case(1, 0, lambda: (R(3, 4),))
def inplace_alias_same_object(x):
    y = x
    y += 1
    return x * 2, y is x


@case(1, 0, lambda: (R(3, 4),))  # captured: views functionalized (alias_fn.c)
def inplace_through_view(x):
    v = x.view(-1)
    v.mul_(2)
    return x + 1


@case(1, 0, lambda: (R(3, 4),))  # captured: views functionalized (alias_fn.c)
def inplace_on_transposed_intermediate(x):
    y = x * 2
    z = y.t()
    z.add_(1)
    return y


@case(1, 0, lambda: (I(3, 4),))
def inplace_int_tensor(x):
    x *= 3
    x += 2
    x.clamp_(max=10)
    return x


@case(1, 0, lambda: (I(3, 4),), raises=RuntimeError, reason="can't be cast")
def inplace_int_tensor_float_result(x):
    x *= 1.5
    return x


@case(1, 0, lambda: ([R(3), R(3)],))
def inplace_list_element(xs):
    xs[0].add_(xs[1])
    return xs[0] * 2


@case(1, 0, lambda: (NC(4, 3),))
def inplace_noncontiguous_input(x):
    x.mul_(2).add_(1)
    return x.sum(0)


# the update breaks so eager raises at the statement (inside any try), not at copy-back
@case(1, 0, lambda: (EXP(3, 4),), raises=RuntimeError, reason="share memory")
def inplace_expanded_input(x):
    x.add_(1)
    return x


@case(1, 0, lambda: (R(3, 4), R(3, 4)))
def inplace_then_read_other(x, y):
    z = x + y
    x.add_(10)
    return z, x - z


@case(1, 0, lambda: (R(4),))
def inplace_unary_methods(x):
    a = x * 1
    a.exp_()
    a.neg_()
    a.abs_()
    a.sqrt_()
    a.tanh_()
    return a


@case(1, 0, lambda: (R(4), R(4)))
def inplace_binary_methods(x, y):
    x.sub_(y, alpha=0.5)
    x.maximum_(y) if False else x.div_(2)
    x.pow_(2)
    return x


@case(0, 0, lambda: (R(4),), reason="relu_")
def inplace_torch_relu_(x):
    torch.relu_(x)
    return x


def _same_twice(t):
    return (t, t)


@case(1, 0, lambda: _same_twice(R(3, 4)))  # fixed: ALIAS guard
def inplace_aliased_arguments(a, b):
    a.add_(1)
    return b * 2


@case(1, 0, lambda: (R(4),))
def inplace_through_noop_cast(x):
    y = x.float()
    y.add_(1)
    return x


@case(1, 0, lambda: _same_twice(R(3, 4)))  # fixed: ALIAS guard
def is_on_aliased_arguments(a, b):
    return a * (2.0 if a is b else 3.0)


@case(1, 0, lambda: (R(3, 4),))  # fixed: detach() is a new object
def detach_is_not_self(x):
    return x.detach() is x, x * 2


_RG_W = nn.Parameter(torch.ones(4))


@case(1, 0, lambda: (R(4),), grad=False)
def requires_grad_attribute_under_no_grad(x):
    if _RG_W.requires_grad:
        return x * _RG_W
    return x * 3


# ======================================================================================
# L. graph breaks
# ======================================================================================

@case(1, 0, lambda: (R(4), R(4)), reason="print")
def break_print_first(x, y):
    print("start")
    return x + y


@case(2, 1, lambda: (R(4),), reason="print")
def break_print_middle(x):
    y = x.relu() * 2
    print("mid", 3, "x")
    return y + x


@case(1, 0, lambda: (R(4),), reason="print")
def break_print_last(x):
    y = x * 2
    print("done")
    return y


@case(2, 1, lambda: (R(4),), reason="item")
def break_item(x):
    y = x * 2
    s = y.sum().item()
    return y + s


@case(2, 1, lambda: (R(4),), reason="tolist")
def break_tolist(x):
    y = x * 2
    vals = y.tolist()
    return y + len(vals)


@case(1, 1, lambda: (R(4),), reason="numpy")  # numpy's own frames are skipped (skipfiles.c)
def break_numpy(x):
    y = x * 2
    a = y.numpy()
    return y + float(a.sum())


@case(2, 1, lambda: (R(4),), reason="id")
def break_unknown_builtin(x):
    y = x + 1
    k = id(y) > 0
    return y * 2, k


@case(2, 1, lambda: (R(4),), reason="unique")
def break_unsupported_tensor_method(x):
    y = x * 2
    z = y.unique().amax(0, keepdim=True)
    return z + y


@case(1, 0, lambda: (R(4), R(4)))
def break_unsupported_torch_function(x, y):
    z = torch.cat([x * 2, y])
    return z.relu()


@case(2, 1, lambda: (R(4),), reason="data-dependent")
def break_data_dependent_if(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


@case(3, 2, lambda: (R(4),), reason="print")
def break_twice(x):
    y = x + 1
    print("a")
    z = y * 2
    print("b")
    return z.relu()


# one break (the print inside the callee); the enclosing frame records it at its call too and
# explain counts it once
@case(3, 2, lambda: (R(4),), reason="print")
def break_inside_inlined(x):
    return _prints_inside(x + 1) - 1


def _prints_inside(x):
    print("inside")
    return x * 3


@case(4, 3, lambda: (R(4),), reason="data-dependent")
def break_data_dependent_in_loop(x):
    for i in range(3):
        if x.sum() > i:
            x = x - 1
        else:
            x = x + 1
    return x


@case(2, 1, lambda: (R(4),), reason="item")
def break_item_condition(x):
    if x.sum().item() > 0:
        return x + 1
    return x - 1


@case(2, 1, lambda: (R(4), [1.0, 2.0]), reason="print")
def break_with_live_python_values(x, ks):
    t = (x, 2.0, "s")
    k = ks[0]
    print("x")
    y = t[0] * k + t[1]
    print(t[2])
    return y * ks[1]


@case(2, 1, lambda: (R(4),), reason="print")
def break_then_inplace(x):
    y = x * 2
    print("then")
    y.add_(1)
    x.mul_(3)
    return y


@case(2, 1, lambda: (R(4),), reason="print")
def break_before_inplace_on_input(x):
    x.add_(1)
    print("after add")
    x.mul_(2)
    return x + 1


@case(2, 1, lambda: (R(4),), reason="data-dependent")
def break_data_dependent_while(x):
    n = 0
    while x.sum() < 10:
        x = x + 3
        n = n + 1
    return x, n


@module_case(3, 2, lambda: (R(4, 8),), reason="print", leak=MODULE_BREAK_LEAK)
class BreakInSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.ReLU()
        self.b = _PrintingModule()

    def forward(self, x):
        return self.b(self.a(x)) + 1


class _PrintingModule(nn.Module):
    def forward(self, x):
        print("submodule")
        return x * 2


@case(2, 1, lambda: (R(4),), reason="torchc.disable")
def break_disabled_function(x):
    return _disabled(x * 2) + 1


def _disabled(x):
    return x.unique().amax(0, keepdim=True)


import torchc as _torchc  # noqa: E402

_torchc.disable(_disabled)


@case(1, 0, lambda: (R(4),), reason="print")  # g lives across the break: rebuilt for the resume (sym_output.c made_function)
def break_in_frame_with_cells(x):
    k = 2.0

    def g(y):
        return y * k
    print("cells")
    return g(x)


@case(1, 0, lambda: (R(4), []))  # appended in the graph, written back after it (sideeffects.c)
def break_list_append_side_effect(x, log):
    y = x * 2
    log.append(y.sum())
    return y + len(log)


@case(1, 0, lambda: (R(4),), state=_counter_state, reset=_counter_reset)  # a global list, written back
def break_global_list_mutation(x):
    y = x + 1
    COUNTER[0] = COUNTER[0] + 1
    return y * COUNTER[0]


# ======================================================================================
# M. returns
# ======================================================================================

@case(0, 0, lambda: (R(4),))
def return_input(x):
    return x


@case(0, 0, lambda: (R(4), R(4)))
def return_inputs_swapped(x, y):
    return y, x


@case(0, 0, lambda: (R(4),))
def return_constants(x):
    return 3, 2.5, "s", None, True, (1, (2, 3))


@case(1, 0, lambda: (R(4),))
def return_none_implicit(x):
    y = x * 2  # noqa: F841


@case(1, 0, lambda: (R(4),))
def return_nested_tuples(x):
    y = x * 2
    return (y, (x, (y + 1, [x, 3])), "k")


@case(1, 0, lambda: (R(4),))
def return_list(x):
    return [x + 1, x * 2]


@case(1, 0, lambda: (R(4),))
def return_same_tensor_twice(x):
    y = x * 2
    return y, y, (y,)


@case(0, 0, lambda: (R(4),))
def return_size_and_dtype(x):
    return x.size(), x.dtype, x.device


@case(1, 0, lambda: (R(4),))
def return_dict(x):
    return {"y": x * 2}


@case(1, 0, lambda: (R(4),))
def return_input_after_inplace(x):
    x.mul_(2)
    return x, x + 1


# ======================================================================================
# N. pointwise and reduction math
# ======================================================================================

@case(1, 0, lambda: (R(3, 5), R(3, 5)))
def pointwise_f32_chain(x, y):
    a = torch.sigmoid(x) * torch.tanh(y) + torch.exp(-x.abs())
    b = torch.sqrt(y.abs() + 1) - torch.rsqrt(x * x + 1) + torch.reciprocal(y.abs() + 2)
    c = torch.sin(x) * torch.cos(y) + torch.log(a.abs() + 1)
    return a + b * c


@case(1, 0, lambda: (D(3, 5), D(3, 5)))
def pointwise_f64_chain(x, y):
    return (x.exp() - y.sigmoid()) / (1 + y * y) + torch.pow(x.abs(), 1.5) - x.square()


@case(1, 0, lambda: (I(3, 5), I(3, 5)))
def pointwise_int_arith(x, y):
    return x * y + x - y * 3 + torch.maximum(x, y) - torch.minimum(x, y).abs() + (-x)


@case(1, 0, lambda: (I(3, 5), I(3, 5)))
def int_true_division(x, y):
    return x / 2 + y / (y.abs() + 1)


@case(1, 0, lambda: (I(3, 5, dtype=torch.int32), I(3, 5)))
def int32_int64_promotion(x, y):
    return x * 2 + y, x + x, (x * 3).sum(0)


@case(1, 0, lambda: (B(3, 5), B(3, 5), R(3, 5)))
def bool_logic_and_where(a, b, x):
    m = torch.logical_and(a, b) | torch.logical_or(a, b).logical_not()
    m = m & (x > 0)
    return torch.where(m, x, -x), m, a.sum(), (x > 0).sum(-1)


@case(1, 0, lambda: (R(3, 5), R(3, 5)))
def comparisons_to_bool(x, y):
    return x > y, x >= 0, x < y, x <= 0.5, x == x, x != y, torch.eq(x, y), x.ne(0)


@case(1, 0, lambda: (R(3, 5),))
def where_with_scalars(x):
    return torch.where(x > 0, x, 0.0) + torch.where(x < 0, 1.0, x)


@case(1, 0, lambda: (R(2, 3, 5),))
def reductions_dims(x):
    return (x.sum(), x.sum(0), x.sum((0, 2)), x.mean(-1, keepdim=True), x.amax(1),
            x.amin(dim=(1, 2), keepdim=True), torch.sum(x, dim=[0, 1]))


@case(1, 0, lambda: (I(3, 5), B(3, 5)))
def reductions_int_bool(x, b):
    return x.sum(), x.sum(1), b.sum(0), x.amax(), b.sum(dtype=torch.float32), x.sum(dtype=torch.float64)


@case(1, 0, lambda: (R(3, 5), R(3, 5)))
def max_min_variants(x, y):
    return torch.max(x), torch.min(x), torch.max(x, y), x.min(y), x.max()


@case(1, 0, lambda: (R(3, 5),))  # max(dim) is (amax, argmax) in the graph
def max_with_dim(x):
    v, i = torch.max(x, 1)
    return v * 2, i


@case(1, 0, lambda: (R(3, 5),))
def softmax_family(x):
    return (x.softmax(-1), F.softmax(x, dim=0), torch.softmax(x, 1), F.log_softmax(x, -1),
            x.log_softmax(dim=0), torch.softmax(x, -1, dtype=torch.float64))


@case(1, 0, lambda: (R(3, 8), R(8), R(8)))
def functional_norms(x, w, b):
    return (F.layer_norm(x, (8,)), F.layer_norm(x, [8], w, b, 1e-3), F.rms_norm(x, (8,), w),
            torch.layer_norm(x, (8,)))


@case(1, 0, lambda: (R(3, 8),))
def activations(x):
    return (F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x), F.relu(x), torch.sigmoid(x),
            torch.tanh(x), x.relu(), x.sigmoid())


@case(1, 0, lambda: (R(3, 8),))
def clamp_family(x):
    return (x.clamp(-0.5, 0.5), torch.clamp(x, min=0.0), x.clip(max=0.1), x.clamp_min(0.2),
            x.clamp_max(-0.2), torch.clamp(x, x * 0.5, x * 0 + 1))


@case(1, 0, lambda: (R(3, 8),))
def pow_variants(x):
    a = x.abs() + 0.1
    return a ** 2, a ** 0.5, 2 ** x, a.pow(3), torch.pow(a, a), x ** 2


@case(1, 0, lambda: (R(3, 8),))
def division_variants(x):
    return x / 3, 3 / (x.abs() + 1), x.div(2.0), torch.div(x, x.abs() + 1), x.true_divide(4)


@case(1, 0, lambda: (R(3, 8),))
def division_by_zero_inf_nan(x):
    z = x * 0
    return x / z, z / z, torch.log(z), (x / z) > 0


@case(1, 0, lambda: (R(3, 8),))
def div_rounding_mode(x):
    return torch.div(x, 2, rounding_mode="floor")


@case(1, 0, lambda: (I(3, 8),))
def floor_div_and_mod(x):
    return x // 3, x % 3


@case(1, 0, lambda: (I(3, 8),))
def integer_pow(x):
    return x ** 2, 2 ** x.abs(), x ** x.abs()


@case(1, 0, lambda: (B(3, 8),))
def bool_invert(b):
    return ~b


@case(0, 1, lambda: (B(3, 8),), raises=RuntimeError)
def bool_negation_raises(b):
    return -b


@case(0, 0, lambda: (I(3, 8),), raises=RuntimeError, reason="mean()")
def mean_of_int_raises(x):
    return x.mean()


@case(1, 0, lambda: (R(3, 8),))
def casts(x):
    return x.double(), x.int(), x.long(), x.bool(), x.to(torch.float64), x.to(dtype=torch.int32), (x > 0).float()


@case(1, 0, lambda: (R(3, 8), D(8)))
def mixed_dtype_promotion(x, y):
    return x + y, x * 2.5, x.int() * 1.5, x.int() + True, (x > 0) + 1


@case(1, 0, lambda: (R(3, 8),))
def add_sub_alpha(x):
    return torch.add(x, x, alpha=2), x.sub(1, alpha=3), torch.subtract(x, 0.5)


@case(1, 0, lambda: (R(3, 8),))
def detach_and_identity_ops(x):
    return x.detach() * 2, (x + 1).contiguous(), F.dropout(x, 0.5, training=False) + 1


@case(1, 0, lambda: (R(3, 8),))
def dropout_p0_training(x):
    return F.dropout(x, p=0.0) * 2


# ======================================================================================
# O. broadcasting, layouts, sizes
# ======================================================================================

@case(1, 0, lambda: (R(3, 1), R(1, 4)))
def broadcast_outer(x, y):
    return x * y + x - y


@case(1, 0, lambda: (R(2, 1, 5), R(3, 1), R(5)))
def broadcast_3d(x, y, z):
    return x + y * z


@case(1, 0, lambda: (R(3, 4), torch.tensor(2.5)))
def broadcast_zero_dim_tensor(x, s):
    return x * s + s, s * 2


@case(1, 0, lambda: (torch.tensor(1.5),))
def zero_dim_only(s):
    return s * 2 + 1, s.sum(), s.exp()


@case(1, 0, lambda: (NC(5, 7), R(5, 7)))
def noncontiguous_transposed_input(x, y):
    return x * y + x.sum(0) * 0 + x.relu()


@case(1, 0, lambda: (ST(4, 6),))
def noncontiguous_strided_input(x):
    return x.exp().sum(-1), x * 2


@case(1, 0, lambda: (EXP(4, 6), R(4, 6)))
def expanded_stride0_input(x, y):
    return x + y, x.sum(1)


@case(1, 0, lambda: (R(2, 3, 4).permute(2, 0, 1),))
def permuted_3d_input(x):
    return x.softmax(-1) + x.mean(0)


@case(1, 0, lambda: (R(0, 4),))
def empty_tensor_pointwise(x):
    return x * 2 + 1, x.sum(0), x.sum()


@case(0, 0, lambda: (R(0, 4),), raises=IndexError, reason="amax()")
def empty_tensor_amax_raises(x):
    return x.amax(0)


@case(1, 0, lambda: (R(1, 1),))
def size_one_tensor(x):
    return x * 2, x.sum(-1), x.softmax(0)


@case(1, 0, lambda: (R(7, 33),))
def odd_sizes(x):
    return x.softmax(-1) * x.sum(0, keepdim=True), x.mean(1)


@case(1, 0, lambda: (R(3, 300),), tol=(1e-4, 1e-4))
def larger_row_reduction(x):
    return x.sum(-1), F.layer_norm(x, (300,))


@case(1, 0, lambda: (R(2, 3, 4, 5),))
def four_dims(x):
    return x.sum((1, 3)), x.permute(3, 2, 1, 0) * 2, x.mean(2, keepdim=True) - x


@case(1, 0, lambda: (R(4), 3))
def scalar_python_int_argument(x, k):
    return x * k, x + k * 2


@case(1, 0, lambda: (R(4), 0.25))
def scalar_python_float_argument(x, k):
    return x * k, x ** k if False else x - k


@case(1, 0, lambda: (R(3, 4), R(3, 4)))
def reuse_of_intermediate_many_times(x, y):
    z = x * y
    return z + z * z - z.sum(0) + z.amax(-1, keepdim=True)


# ======================================================================================
# P. more dtypes and numerics
# ======================================================================================

@case(1, 0, lambda: (R(4, 8).half(), R(4, 8).half()), tol=(1e-2, 1e-2))
def float16_math(x, y):
    return x * y + x.exp(), (x * y).sum(-1), x.softmax(-1), x.float() + 1


@case(1, 0, lambda: (R(4, 8).bfloat16(), R(4, 8).bfloat16()), tol=(2e-2, 2e-2))
def bfloat16_math(x, y):
    return x * y - y.sigmoid(), (x + y).mean(0), F.gelu(x)


@case(1, 0, lambda: (torch.arange(0, 250, 25, dtype=torch.uint8),
                     torch.arange(-120, 120, 25, dtype=torch.int8)))
def small_int_wraparound(u, i):
    return u + 200, u * 3, i + 100, i * 3, -i


@case(1, 0, lambda: (torch.tensor([[1.0, float("nan"), 2.0], [0.5, -1.0, 3.0]]),))
def nan_propagation(x):
    return (x.amax(-1), x.max(), torch.maximum(x, x * 0), x.clamp(0, 1), x.relu(),
            torch.minimum(x, x * 0), x.amin(0), x.softmax(-1), x.sum(-1), x > 0)


@case(1, 0, lambda: (torch.tensor([0.1, 0.2, 0.3, 1e-8]),))
def compare_with_inexact_scalars(x):
    return x > 0.1, x == 0.1, x >= 0.2, x < 0.3, x == 1e-8, x * 0.1 == 0.01


@case(1, 0, lambda: (torch.tensor([-1000.0, -88.0, 0.0, 88.0, 89.0, 1000.0]),))
def overflow_saturation(x):
    return x.exp(), x.sigmoid(), x.tanh(), F.gelu(x), F.silu(x), x.softmax(-1), x.log_softmax(-1)


@case(1, 0, lambda: (torch.tensor([0.0, -1.0, 2.0, -0.0, float("inf")]),))
def special_values(x):
    return x ** 0, x ** 0.5, torch.pow(x, x), x.rsqrt(), x.sqrt(), x.log(), x.reciprocal()


@case(1, 0, lambda: (R(1000, 64),), tol=(1e-4, 1e-3))
def large_reductions(x):
    return x.sum(), x.sum(0), x.mean(), x.amax(0), x.softmax(0).sum(0)


@case(1, 0, lambda: (torch.tensor([-1.5, -0.5, 0.5, 1.7, 2.5]),))
def float_to_int_truncation(x):
    return x.int(), x.long(), (x * 10).to(torch.int32)


@case(1, 0, lambda: (torch.arange(-3, 4), torch.linspace(-3, 3, 7)))
def int_float_mixed_compare(x, y):
    return x > y, x == y, x + y, torch.where(x > 0, x, 0.5), torch.clamp(x, min=0.5)


# ======================================================================================
# Q. more aliasing
# ======================================================================================

def _overlapping():
    base = torch.randn(4)
    return base, base[:2]


@case(0, 1, _overlapping, reason="shares memory")  # fixed: runs eagerly (NO_ALIASING guard)
def overlapping_view_arguments(a, b):
    a.add_(1)
    return b * 2


@case(2, 1, lambda: (R(2, 3),), reason="print")
def view_of_intermediate_across_break(x):
    y = x * 2
    z = y.view(-1)
    print("break")
    z.add_(1)
    return y


@case(2, 1, lambda: (R(2, 3),), reason="print")
def view_of_intermediate_across_break_no_inplace(x):
    y = x * 2
    z = y.view(-1)
    print("break")
    return y + 1, z * 2


@case(0, 0, lambda: (R(2, 3),), reason="id")  # fixed: a real detached tensor
def detach_of_input_returned(x):
    v = x.detach()
    _ = id(v)
    return v


@case(1, 0, lambda: (D(2, 3),))
def noop_to_returns_self(x):
    return x.to(torch.float64)


# ======================================================================================
# R. combined, model-like programs
# ======================================================================================

class _GatedBlock(nn.Module):
    def __init__(self, d, act="silu"):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.gate = nn.Parameter(torch.randn(d) * 0.1)
        self.act = nn.SiLU() if act == "silu" else nn.GELU(approximate="tanh")
        self.drop = nn.Dropout(0.1)
        self.use_residual = True

    def forward(self, x):
        h = self.norm(x)
        h = self.act(h) * torch.sigmoid(h * self.gate)
        h = self.drop(h)
        if self.use_residual:
            h = h + x
        return h


@module_case(1, 0, lambda: (R(2, 5, 16),), factory=lambda: GatedStack().eval())
class GatedStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([_GatedBlock(16, a) for a in ("silu", "gelu", "silu")])
        self.final = nn.LayerNorm(16)
        self.scale = 16 ** -0.5

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.final(x) * self.scale


@module_case(1, 0, lambda: (R(2, 6, 8),), factory=lambda: HeadsReshape().eval())
class HeadsReshape(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = 2

    def forward(self, x):
        b, t, c = x.size(0), x.size(1), x.size(2)
        h = self.heads
        q = (x * 0.5).view(b, t, h, c // h).transpose(1, 2)        # b h t d
        s = (q.unsqueeze(3) * q.unsqueeze(2)).sum(-1) / math.sqrt(c // h)  # b h t t
        p = s.softmax(-1)
        o = (p.unsqueeze(-1) * q.unsqueeze(2)).sum(3)              # b h t d
        return o.transpose(1, 2).reshape(b, t, c) + x


@module_case(2, 1, lambda: (R(4, 8),), reason="item", factory=lambda: LoggingModel().eval(),
             leak=MODULE_BREAK_LEAK)
class LoggingModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.LayerNorm(8), nn.GELU())
        self.steps = 0

    def forward(self, x):
        y = self.body(x)
        norm = y.pow(2).sum().item()
        return y / (norm ** 0.5 + 1e-6)


@module_case(1, 0, lambda: (R(4, 8),), factory=lambda: TrainingBranch().eval())
class TrainingBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        if self.training:
            x = self.drop(x) * 10
        else:
            x = x * 2
        return x.relu()


@module_case(1, 0, lambda: (R(4, 8),), factory=lambda: ConfigActivation())
class ConfigActivation(nn.Module):
    def __init__(self):
        super().__init__()
        self.act_name = "gelu"

    def forward(self, x):
        act = getattr(F, self.act_name)
        return act(x) + 1


@case(1, 0, lambda: (R(3, 8), R(8), R(8)))
def llama_style_mlp_without_matmul(x, w_gate, w_up):
    h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return F.silu(h * w_gate) * (h * w_up) + x


@case(2, 1, lambda: (R(3, 8),), reason="print")
def debug_prints_in_model_code(x):
    print("input", x.dim(), x.size(0))
    y = F.gelu(x * 2)
    print("after gelu")
    return y.softmax(-1)


@case(1, 0, lambda: (R(2, 3, 8), 2, True))
def config_driven_function(x, n_layers, use_norm):
    for i in range(n_layers):
        y = x * (i + 1) if i % 2 == 0 else x.relu()
        if use_norm:
            y = F.layer_norm(y, (x.size(-1),))
        x = x + y * 0.5
    return x, n_layers * 2


# ======================================================================================
# S. graph breaks in awkward places
# ======================================================================================

@case(1, 0, lambda: (R(5),), reason="unique")
def break_mid_expression(x):
    y = x + torch.unique(x).amax(0, keepdim=True) * 2 - x.relu()
    return y


@case(2, 1, lambda: (R(5),), reason="unique")
def break_in_method_chain(x):
    return x.relu().unique().amax(0, keepdim=True).exp() * 2


@case(2, 1, lambda: (R(5),), reason="unique")
def break_call_with_keywords(x):
    y = torch.unique(x * 2).amax(0, keepdim=True)
    return y + 1


@case(1, 0, lambda: (R(5), True), reason="unique")
def break_in_conditional_expression(x, flag):
    y = x.unique().amax(0, keepdim=True) if flag else x
    return y * 3


@case(1, 0, lambda: (R(5),), reason="print")
def break_print_with_keywords(x):
    y = x * 2
    print("a", "b", sep="-", end="!\n")
    return y


@case(2, 1, lambda: (R(5), True), reason="data-dependent")
def break_data_dependent_and(x, flag):
    if flag and x.sum() > 0:
        return x + 1
    return x - 1


@case(1, 0, lambda: (R(5),), raises=IndexError, reason="nanquantile")
def break_call_raises_after_inplace(x):
    x.add_(1)
    y = x.nanquantile(0.5, 5)
    return y


@case(3, 2, lambda: (R(5), R(5)), reason="print")
def break_inside_for_over_tuple(x, y):
    acc = x * 0
    for t in (x, y):
        print("step")
        acc = acc + t
    return acc


@case(3, 2, lambda: (R(5),), reason="print")
def break_inside_for_range(x):
    for i in range(3):
        x = x * 2
        print(i)
    return x


@case(2, 1, lambda: (R(5),), reason="unique")
def break_result_in_nested_return(x):
    y = x * 2
    return (y, (x.unique().amax(0, keepdim=True), [y + 1]))


@case(2, 1, lambda: (R(6),), reason="unique")
def three_breaks_different_stack_depths(x):
    a = x.unique().amax(0, keepdim=True)
    b = (a + 1) * x.unique().amax(0, keepdim=True)
    c = (a, (b, x.flip(0)))
    return c


@case(2, 1, lambda: (R(5),), reason="print")
def break_between_two_inplace_updates_of_intermediate(x):
    y = x * 2
    y.add_(1)
    print("mid")
    y.mul_(3)
    return y, x


@case(2, 1, lambda: (R(3, 4),), reason="item")
def item_feeds_shape_arithmetic(x):
    n = int(x.abs().sum().item() > -1) + 1
    return x.reshape(x.size(0) * n, -1) * 2 if n == 1 else x.reshape(-1, x.size(1) // 2 * 2) + n


@case(1, 0, lambda: (R(3, 4),))
def raise_statement_not_taken(x):
    if x.dim() != 2:
        raise ValueError("need 2-d")
    return x + 1


# fixed: constructing an exception is not a break point; the raise is (at the edge of an
# empty graph: listed, not counted), then eager's ValueError is raised
@case(0, 0, lambda: (R(3, 4),), raises=ValueError, reason="ValueError")
def raise_statement_taken(x):
    if x.dim() == 2:
        raise ValueError("no 2-d please")
    return x + 1


@case(1, 0, lambda: (R(3, 4), R(3, 4)))
def top_level_varargs(*xs):
    acc = xs[0]
    for t in xs[1:]:
        acc = acc + t
    return acc * len(xs)


@module_case(1, 0, lambda: (R(3, 4), B(3, 4)))
class ForwardWithOptionalMask(nn.Module):
    def forward(self, x, mask=None, scale=1.0):
        if mask is not None:
            x = torch.where(mask, x, 0.0)
        return x * scale


@case(1, 0, lambda: (R(3, 4), R(3, 4), R(4)))
def top_level_varargs_loop(*xs):
    acc = xs[0] * 0
    for t in xs:
        acc = acc + t
    return acc * len(xs)


@module_case(1, 0, lambda: (R(3, 4),))
class ForwardWithoutMask(ForwardWithOptionalMask):
    pass


# ======================================================================================
# T. indexing, slicing, data movement
# ======================================================================================

@case(1, 0, lambda: (R(4, 5),))
def index_and_slice_basic(x):
    return x[0], x[:, 1:], x[..., ::2], x[None, :, -1], x[1:3, :2] * 2, x[-2:] + 1


@case(1, 0, lambda: (R(6, 4), 2))
def slice_bounds_from_arguments_and_sizes(x, i):
    n = x.size(0) // 2
    return x[i:], x[:i], x[::i], x[..., i], x[:n] + x[n:2 * n], x[1::2]


@case(1, 0, lambda: (R(5, 4),))
def slice_out_of_range_bounds(x):
    return x[10:], x[:10], x[-10:], x[3:1]


@case(0, 1, lambda: (R(5, 4),), raises=IndexError, reason="index out of range")
def int_index_out_of_range_raises(x):
    return x[5]


@case(1, 0, lambda: (R(4, 5), torch.tensor([0, 2, 2])))
def index_with_int_tensor(x, i):
    return x[i], x[:, i], x.index_select(1, i)


@case(1, 0, lambda: (R(4, 5), torch.tensor([-1, 0])))
def index_with_negative_int_tensor(x, i):
    return x[i] * 2


@case(1, 0, lambda: (R(4, 5), torch.tensor([7, 0])), raises=IndexError)
def index_with_out_of_range_tensor(x, i):
    return x.index_select(0, i)


@case(1, 0, lambda: (R(10, 4), torch.tensor([1, 2, 9, 0])))
def embedding_lookup(w, i):
    return F.embedding(i, w) * 2, w.index_select(0, i)


@case(1, 0, lambda: (R(4, 3), torch.tensor([7, 0])), raises=IndexError)
def embedding_out_of_range(w, i):
    return F.embedding(i, w)


@case(1, 0, lambda: (R(4, 5),), reason="boolean mask")  # a break at the read, resumed after it
def index_with_bool_mask(x):
    return x[x > 0]


@case(1, 0, lambda: (R(3, 4), R(3, 4)))
def cat_stack(x, y):
    return torch.cat([x, y], 0), torch.stack([x, y], 1), torch.cat((x, y * 2), dim=-1)


@case(1, 0, lambda: (R(4, 7),))
def split_chunk_narrow_select(x):
    return x.split(3, 1), x.chunk(3, 0), torch.split(x, [2, 5], dim=1), x.narrow(1, 1, 2), x.select(0, 1)


@case(1, 0, lambda: (R(3, 5),))
def arange_in_expressions(x):
    return x + torch.arange(x.size(-1)), x * torch.arange(0, 1, 0.2), torch.arange(3)


@case(1, 0, lambda: (torch.tensor([[1.0, 3.0, 3.0], [2.0, float("nan"), 0.0]]),))
def argmax_argmin_ties_nan(x):
    return x.argmax(-1), x.argmin(0), x.argmax(), torch.argmax(x, dim=1, keepdim=True)


@case(1, 0, lambda: (R(3, 5),))
def prod_reductions(x):
    return x.prod(), x.prod(-1), x.prod(0, keepdim=True)


@case(1, 0, lambda: (torch.arange(-6, 6), torch.tensor([3, -3]).repeat(6)))
def int_mod_floordiv(x, y):
    return x % y, x // y, torch.remainder(x, 3), torch.fmod(x, 3), x % 2.5, -x // 3


@case(1, 0, lambda: (R(3, 5) * 4, R(3, 5) + 0.1))
def float_mod_floordiv(x, y):
    return x % y, x // y, x % 0.7, x // 0.3


@case(1, 0, lambda: (torch.arange(-3, 3), torch.zeros(6, dtype=torch.int64)), raises=RuntimeError)  # fixed: zero check
def int_mod_by_zero_raises(x, y):
    return x % y


@case(1, 0, lambda: (torch.arange(-4, 4), torch.arange(8), B(8)))
def bitwise_ops(x, y, b):
    return x & y, x | y, x ^ y, ~x, ~b, b ^ True


@case(1, 0, lambda: (R(4, 6) * 3,))
def decomposed_activations(x):
    return (F.softplus(x), F.elu(x), F.leaky_relu(x, 0.1), F.hardswish(x), F.hardsigmoid(x),
            F.relu6(x * 4), F.hardtanh(x), F.mish(x), F.logsigmoid(x), F.selu(x), F.softsign(x))


@case(1, 0, lambda: (R(4, 6),))
def var_std_logsumexp_norm(x):
    return (x.var(), x.var(-1), x.std(0, keepdim=True), x.var(1, unbiased=False),
            torch.std(x, dim=1, correction=0), x.logsumexp(-1), x.norm(), x.norm(dim=-1),
            torch.norm(x, p=1))


@case(1, 0, lambda: (B(3, 4), R(3, 4)))
def any_all(b, x):
    return b.any(), b.all(-1), (x > 0).any(0), x.all(), torch.any(x, dim=1)


@case(1, 0, lambda: (R(3, 4), B(3, 4)))
def masked_fill_softmax(x, m):
    return x.masked_fill(m, 0.0), x.masked_fill(m, float("-inf")).softmax(-1)


@case(1, 0, lambda: (R(3, 4), R(3, 4), R(3, 4)))
def addcmul_addcdiv_lerp(x, y, z):
    return (torch.addcmul(x, y, z, value=0.5), torch.addcdiv(x, y, z.abs() + 1, value=2),
            torch.lerp(x, y, 0.3), x.lerp(y, z.sigmoid()))


@case(1, 0, lambda: (R(4, 5),))
def tril_triu_flip_roll(x):
    return x.tril(), x.triu(1), torch.tril(x, -1), x.flip(0), torch.flip(x, [0, 1]), x.roll(1, -1)


@case(1, 0, lambda: (R(2, 3), D(1)))
def type_as_repeat(x, y):
    return x.type_as(y), x.repeat(2, 1), x.repeat(1, 2, 3)


@case(1, 0, lambda: (R(2, 3),))
def factories(x):
    return (torch.zeros(3), torch.ones(2, 3) + x, torch.full((2, 3), 2.5), torch.zeros_like(x),
            torch.ones_like(x, dtype=torch.int64), torch.full_like(x, 7), torch.full((2,), 3))


@case(1, 0, lambda: (R(3, 4), R(4, 5)))
def matmul_extern_calls(x, y):
    return (x @ y).relu() + 1, torch.matmul(x, y) * 2


@module_case(1, 0, lambda: (R(2, 4, 3),))
class GroupNormModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 4)

    def forward(self, x):
        return self.gn(x) + 1


@module_case(1, 0, lambda: (R(3, 4),), factory=lambda: BatchNormEval().eval())
class BatchNormEval(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(x).relu()


@module_case(1, 0, lambda: (R(8, 4),))
class BatchNormTraining(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(x) * 2


# ======================================================================================
# U. Python features added since: dicts, f-strings, comprehensions, nested functions,
#    attribute writes, super(), ModuleDict
# ======================================================================================

@case(1, 0, lambda: (R(2, 3),))  # len(dict) is traced
def dict_build_and_iterate(x):
    d = {"a": x, "b": x * 2}
    e = {**d, "c": x + 1}
    s = x * 0
    for k, v in e.items():
        s = s + v * len(k)
    return s, len(e), list(e.keys())


@case(1, 0, lambda: (R(2, 3),))
def fstring_formatting(x):
    s = f"{x.size(0)}-{x.dtype}-{3.14159:.2f}-{'a'!r}"
    return x * len(s), s


@case(1, 0, lambda: (R(2, 3),))
def comprehensions_list_dict(x):
    ys = [x * i for i in range(3)]
    d = {i: t + 1 for i, t in enumerate(ys)}
    return ys[2] + d[1], [t.relu() for t in ys if t is not None]


@case(1, 0, lambda: (R(2, 3),))  # a closure of constants, inlined at each call
def nested_function_closure(x):
    k = 2.0

    def g(y):
        return y * k
    return g(x) + g(x + 1)


@case(1, 0, lambda: (R(3),))  # nonlocal writes reach the frame (sym_cells.c)
def nonlocal_counter(x):
    k = 1

    def inc():
        nonlocal k
        k += 1
    inc()
    inc()
    return x * k


@case(1, 0, lambda: (R(2, 3),))
def unpack_ex_and_call_ex(x):
    a, *b, c = (x, x * 2, x * 3, x * 4)
    args = (a, c)
    return torch.add(*args) + len(b), helper_affine(*args, **{"b": 1.0})


@case(1, 0, lambda: (R(2, 3),))
def getattr_hasattr_default(x):
    return getattr(x, "missing_attr", 3.0) * x, hasattr(x, "foo"), getattr(torch, "relu")(x)


@module_case(2, 1, lambda: (R(2, 3),), reason="print",
              leak=ATTR_WRITE_BREAK_LEAK)
class AttributeWritesAcrossBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.cache = None

    def forward(self, x):
        self.calls += 1
        self.cache = x * 2
        y = self.cache + self.calls
        print("brk")
        self.calls += 10
        return y + self.calls


@module_case(0, 0, lambda: (R(2, 3),), raises=IndexError, reason="nanquantile",
              leak=ATTR_WRITE_BREAK_LEAK)
class AttributeWriteThenRaise(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x.nanquantile(0.5, 5)


@module_case(1, 0, lambda: (R(2, 3),), calls=3)
class AttributeWriteChangesBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls = self.calls + 1
        if self.calls > 1:
            return x * 100
        return x - 1  # an op on each path: every call has one graph


@module_case(1, 0, lambda: (R(2, 3),))
class ModuleDictItems(nn.Module):
    def __init__(self):
        super().__init__()
        self.d = nn.ModuleDict({"b": nn.Tanh(), "a": nn.ReLU()})

    def forward(self, x):
        out = x
        for k, mod in self.d.items():
            out = out + mod(x) * len(k)
        return out, list(self.d.keys()), self.d["a"](x)


class _ClassAttr(nn.Module):
    scale = 2.0
    names = ("a", "b")

    def forward(self, x):
        return x * self.scale + len(self.names)


@module_case(1, 0, lambda: (R(2, 3),))
class ClassAttributes(_ClassAttr):
    pass


@case(4, 3, lambda: (torch.zeros(2), [torch.ones(2), torch.ones(2)]), reason="call to print")  # the resume iterates the live list: the appends seen as eager
def loop_over_list_mutated_after_break(x, lst):
    for t in lst:
        print("b")
        if len(lst) < 4:
            lst.append(t * 2)
        x = x + t
    return x


@case(1, 0, lambda: (R(5, 4),))  # captured: views functionalized (alias_fn.c)
def inplace_on_slice_of_intermediate(x):
    y = x * 1
    v = y[1:]
    v.add_(1)
    return y


@case(1, 0, lambda: (R(5, 4),))  # captured: views functionalized (alias_fn.c)
def inplace_on_slice_of_input(x):
    v = x[1:]
    v.mul_(2)
    return x


@case(1, 0, lambda: (R(5, 4),))
def return_views_of_input(x):
    return x[1:], x.t(), x.view(-1), x[0], x.chunk(2)


@case(1, 0, lambda: (torch.arange(3), R(3)), raises=RuntimeError, reason="lerp: dtypes")
def lerp_integer_start_raises(a, b):
    return torch.lerp(a, b, 0.3)


@case(0, 0, lambda: (torch.arange(3),), raises=RuntimeError, reason="addcdiv of integer")
def addcdiv_integer_raises(a):
    return torch.addcdiv(a, a, a)


@case(1, 0, lambda: (R(3), D(3)), raises=RuntimeError, reason="lerp: dtypes")
def lerp_mixed_float_dtypes_raises(a, b):
    return torch.lerp(a, b, 0.3)


# ======================================================================================
# V. breaks inside loops (the iterator crosses into the resume function)
# ======================================================================================

@case(3, 2, lambda: (R(3), R(3)), reason="print")
def break_in_loop_over_enumerate_zip(x, y):
    acc = x * 0
    for i, (a, b) in enumerate(zip((x, y), (y, x))):
        print(i)
        acc = acc + a * b * i
    return acc


@case(2, 1, lambda: (R(3),), reason="print")
def break_in_loop_over_dict_items(x):
    d = {"a": 1.0, "b": 2.0}
    for k, v in d.items():
        print(k)
        x = x * v
    return x


@case(6, 5, lambda: (R(3) + 2,), reason="data-dependent")
def break_in_nested_loops(x):
    for i in range(3):
        for j in range(2):
            if x.sum() > i + j:
                x = x - 0.5
    return x


@case(2, 1, lambda: (R(3),), reason="print")
def break_in_loop_with_continue_and_break(x):
    i = 0
    for t in (x, x * 2, x * 3):
        i += 1
        if i == 2:
            print("two")
            continue
        x = x + t
        if t.sum() > 100:
            break
    return x, i


@case(4, 3, lambda: (R(3), 3), reason="print")
def break_in_for_else(x, n):
    out = x
    for i in range(n):
        out = out + i
        print(i)
    else:
        out = out * 2
    return out


@module_case(3, 2, lambda: (R(3),), reason="print", leak=MODULE_BREAK_LEAK)
class BreakInModuleListLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.Sigmoid()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            print("layer")
        return x


# ======================================================================================
# W. generic Python objects, exceptions, context managers
# ======================================================================================

class _Config:
    def __init__(self):
        self.scale = 2.0
        self.act = "relu"
        self.layers = 2


class _DynamicAttrs:
    def __getattr__(self, name):
        return 3.0


class _Scaler:
    def __init__(self):
        self.k = 2.0

    def __call__(self, x):
        return x * self.k


@case(1, 0, lambda: (R(3), _Config()))
def config_object_attributes(x, cfg):
    y = x * cfg.scale
    for _ in range(cfg.layers):
        y = y.relu() if cfg.act == "relu" else y.tanh()
    return y


@case(1, 0, lambda: (R(3), _DynamicAttrs()))
def object_with_custom_getattr(x, o):
    return x * o.anything


@case(1, 0, lambda: (R(3), _Scaler()))
def callable_object_inlined(x, c):
    return c(x) + 1


@case(1, 0, lambda: (R(3), _Config()))
def config_object_mutated_in_function(x, cfg):
    cfg.scale = cfg.scale + 1
    return x * cfg.scale


@case(1, 0, lambda: (R(3), "ab"))  # ",".join of a constant list: traced
def str_set_tuple_methods(x, s):
    return x * len(s.upper()) * ("a" in {"a", "b"}) + len(",".join(["a", "b"])) + (1, 2).index(2)


@case(1, 0, lambda: (R(3), _Config()))
def type_is_and_isinstance_of_objects(x, o):
    if type(o) is _Config and isinstance(o, _Config):
        return x + 1
    return x - 1


@case(1, 0, lambda: (R(3),))
def try_finally_no_exception(x):
    try:
        y = x * 2
    except RuntimeError:
        y = x
    finally:
        y = y + 1
    return y


@case(0, 0, lambda: (R(3),), reason="shape is invalid")  # the break inside try: its handler runs (resume.c)
def try_except_taken(x):
    try:
        y = x.view(7)
    except RuntimeError:
        y = x * 3
    return y


@case(1, 0, lambda: (R(3),))
def with_no_grad_block(x):
    with torch.no_grad():
        y = x * 2
    return y + 1, y.requires_grad


@case(1, 0, lambda: (R(3),))  # enable_grad where grad mode is on already: captured, changes nothing
# (was: made eagerly, its __enter__ and __exit__ breaks around the block's one graph)
def with_enable_grad_block(x):
    with torch.enable_grad():
        y = x * 2
    return y
