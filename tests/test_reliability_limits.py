"""Reliability (issue 26): the fixed-size tables of the trace, at and past their size.

Audit (grep of fixed arrays in dynamo_hook/, csrc/, inductor_c/ indexed by counts a program
controls): each table below is checked before it is written and past its size the frame
falls back to eager with a reason (or spills to the heap); these programs go one past
each size in a child process and must match eager, with the reason in torchc.explain.
"""
import pytest

from test_reliability import run_child


def test_trace_tables_past_their_size(tmp_path):
    run_child("""
        import contextvars
        def check(fn, *args, reason=None, graphs=None):
            cf = torchc.compile(fn)
            want = fn(*args)
            got = cf(*args)
            torch.testing.assert_close(got, want)
            e = torchc.explain(torchc.compile(fn))(*args)
            if reason is not None:
                assert any(reason in r for r in e.break_reasons), (reason, e.break_reasons)
            if graphs is not None:
                assert e.graph_count >= graphs, e.graph_count
            return e
        xs = [torch.randn(2) for _ in range(100)]
        # cat / stack of 100 tensors (ops_views.c sym_h_cat: 64 operands)
        check(lambda *a: torch.cat(a) * 2, *xs)
        check(lambda *a: torch.stack(a).sum(0), *xs)
        # torch.tensor of a 100-number list (ops_pointwise.c sym_h_tensor: was a fixed 64 items,
        # now torchc.config.max_unroll), and of 120 numbers past a max_unroll of 100
        f100 = eval("lambda x: x.sum() + torch.tensor(" + repr(tuple(range(100))) + ").sum()")
        check(f100, torch.randn(3))
        torchc.config.max_unroll = 100
        f120 = eval("lambda x: x.sum() + torch.tensor(" + repr(tuple(range(120))) + ").sum()")
        check(f120, torch.randn(3), reason="torchc.config.max_unroll")
        del torchc.config.max_unroll
        # a call with 70 keyword arguments (sym_call.c: 64)
        def many_kw(x, **kw):
            return x * len(kw)
        kw = {f"k{i}": i for i in range(70)}
        check(lambda x: many_kw(x, **kw) + 1, torch.randn(3))
        # 6 context variables set in one frame (variables.c ctxv: 4), one set 6 deep (4)
        cvs = [contextvars.ContextVar(f"cv{i}", default=0) for i in range(6)]
        def ctx_many(x):
            for i, cv in enumerate(cvs):
                cv.set(i)
            return x + sum(cv.get() for cv in cvs)
        check(ctx_many, torch.randn(3))
        def ctx_deep(x):
            for i in range(6):
                cvs[0].set(i)
            return x + cvs[0].get()
        check(ctx_deep, torch.randn(3))
        # 20 index tensors checked at each call (sym.h idx_src: 16)
        idx = [torch.tensor([i % 3]) for i in range(20)]
        def gathers(x, *ix):
            t = x[ix[0]]
            for i in ix[1:]:
                t = t + x[i]
            return t
        check(gathers, torch.randn(3), *idx)
        # 300 attribute writes on objects (sym.h attrw: 256)
        class O:
            pass
        objs = [O() for _ in range(300)]
        def writes(x):
            for i, o in enumerate(objs):
                o.v = i
            return x + 1
        check(writes, torch.randn(3))
        assert all(o.v == i for i, o in enumerate(objs))
        # 300 plain objects read (sym.h tobj: 256)
        for i, o in enumerate(objs):
            o.w = float(i)
        def reads(x):
            t = x
            for o in objs:
                t = t + o.w
            return t
        check(reads, torch.randn(3))
        # inlining 100 calls deep (sym.h frames: SYM_INLINE_DEPTH, config inline_depth)
        def deep(x, n):
            return x if n == 0 else deep(x + 1, n - 1)
        check(lambda x: deep(x, 100), torch.randn(3))
        # a frame with 2000 locals and 100 arguments (guard value slots: 48 on the stack)
        src = "def wide(" + ", ".join(f"a{i}" for i in range(100)) + "):\\n"
        src += "".join(f"    b{i} = a{i % 100} * {i}\\n" for i in range(2000))
        src += "    return " + " + ".join(f"b{i}" for i in range(0, 2000, 50)) + "\\n"
        g = {}
        exec(src, g)
        check(g["wide"], *[torch.randn(2) for _ in range(100)], graphs=1)
        print("OK")
    """, tmp_path, timeout=600)
