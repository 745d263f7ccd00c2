"""Pieces the differential fuzzers share (tests/test_fuzz.py, tests/test_fuzz_hostile.py):
calling a program with its prints captured, making an input in a given memory layout,
comparing a result with eager's, and asking whether eager agrees with itself before a mismatch is blamed
on torchc. Not a test file: pytest collects nothing here."""
import contextlib
import io

import torch


def dense_strides(t):
    """the strides of the dims that have more than one element (a size-1 dim's stride is
    never used to address an element)"""
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)



def aliases(o, ins):
    """which of the tensors ins share o's storage (None for a non-tensor or an empty one)"""
    if not isinstance(o, torch.Tensor) or o.numel() == 0:
        return None
    p = o.untyped_storage().data_ptr()
    return tuple(i for i, a in enumerate(ins) if a.numel() and a.untyped_storage().data_ptr() == p)


def same_as_eager(got, want, where, tol, strides=False, ins=None):
    """got (compiled) against want (eager), through lists and tuples: a tensor's dtype, shape
    and values (torch.testing.assert_close with tol(want), NaNs equal), with strides=True its
    strides, with ins=(compiled inputs, eager inputs) which inputs it shares storage with;
    anything else by type and ==. Raises AssertionError naming `where`."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"{where}: {type(got).__name__}, eager a tensor"
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, eager {want.dtype}"
        assert got.shape == want.shape, f"{where}: shape {tuple(got.shape)}, eager {tuple(want.shape)}"
        torch.testing.assert_close(got, want, equal_nan=True, **tol(want), msg=lambda m: f"{where}: {m}")
        if strides and want.numel() > 1:  # eager's layout (issue 26 item 9)
            assert dense_strides(got) == dense_strides(want), \
                f"{where}: strides {got.stride()}, eager {want.stride()} (shape {tuple(want.shape)})"
        if ins is not None:
            assert aliases(got, ins[0]) == aliases(want, ins[1]), \
                f"{where}: shares storage with inputs {aliases(got, ins[0])}, eager {aliases(want, ins[1])}"
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), f"{where}: {got!r} vs eager {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            same_as_eager(g, w, f"{where}[{i}]", tol, strides, ins)
    else:
        assert type(got) is type(want) and got == want, f"{where}: {got!r} vs eager {want!r}"


def call_captured(fn, args, kw=None):
    """fn(*args, **kw) with stdout captured: (result or None, exception or None, printed)"""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            out = fn(*args, **(kw or {}))
            exc = None
        except Exception as e:  # noqa: BLE001 (compared with eager's)
            out, exc = None, e
    return out, exc, buf.getvalue()


def laid_out(base, shape, layout):
    """a tensor of `shape` made by base(size) in `layout`: "t" (the last two dims
    transposed), "strided" (every other element of the last dim), "expand" (the last dim
    broadcast from 1), otherwise contiguous"""
    shape = tuple(shape)
    if layout == "t":
        return base(shape[:-2] + (shape[-1], shape[-2])).transpose(-1, -2)
    if layout == "strided":
        return base(shape[:-1] + (2 * shape[-1],))[..., ::2]
    if layout == "expand":
        return base(shape[:-1] + (1,)).expand(shape)
    return base(shape)


def eager_nondeterministic(rerun, exc_e, same, printed_e=None, tries=24):
    """Eager must agree with itself before torchc is held to it: some ATen kernels read
    overlapping memory nondeterministically (torch.median over a stride-0 dim of an expanded
    input gives different values run to run on the CPU: hostile fuzz seed 186264 program 140).
    Asked only after a mismatch; rerunning eager enough times makes a miss unlikely (0.7**24
    there).
    rerun() runs eager once more on fresh inputs and returns (out, exc, printed, inputs);
    same(out, inputs) raises AssertionError where they differ from the first eager run, whose
    exception was exc_e and (when printed_e is not None) whose output printed printed_e."""
    for _ in range(tries):
        out, exc, printed, ins = rerun()
        if (exc is None) != (exc_e is None) or (printed_e is not None and printed != printed_e):
            return True
        if exc is None:
            try:
                same(out, ins)
            except AssertionError:
                return True
    return False
