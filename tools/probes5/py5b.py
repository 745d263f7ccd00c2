"""Python semantics across graph breaks, second batch."""
import torch

from probe2 import scenario

STATE = {"calls": []}


@scenario(exact=True)
def nonlocal_across_break(C, R):
    def outer():
        n = 0
        def f(x):
            nonlocal n
            n += 1
            y = x * n
            print("n", n, y.sum().item())
            n += 10
            return y + n
        g = C(f)
        return g(torch.ones(2)), g(torch.ones(2)), n
    R(outer())


@scenario(exact=True)
def loop_with_breaks(C, R):
    def f(x):
        out = []
        for i in range(4):
            x = x + i
            if x.sum().item() > 10:
                print("big at", i)
                out.append(("big", i))
            else:
                out.append(("small", i))
        return x, out
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2) * 3))


@scenario(exact=True)
def generator_send_close(C, R):
    def gen():
        total = 0
        while True:
            v = yield total
            if v is None:
                break
            total += v
    def f(x):
        g = gen()
        next(g)
        a = g.send(x.sum())
        b = g.send(x.max())
        g.close()
        return a, b
    R(C(f)(torch.arange(4.)))


@scenario(exact=True)
def exception_chaining(C, R):
    def f(x):
        try:
            y = x.reshape(7)
        except RuntimeError as e:
            raise ValueError("bad shape") from e
        return y
    g = C(f)
    try:
        g(torch.ones(3))
    except ValueError as e:
        R((type(e).__name__, str(e), type(e.__cause__).__name__))
    def h(x):
        try:
            return x[10]
        except IndexError:
            return x.sum()
        finally:
            STATE["calls"].append("fin")
    STATE["calls"].clear()
    R(C(h)(torch.ones(3)))
    R(list(STATE["calls"]))


@scenario(exact=True)
def raise_custom_from_compiled(C, R):
    class MyErr(Exception):
        def __init__(self, v):
            super().__init__(f"value {v}")
            self.v = v
    def f(x):
        y = x * 2
        if y.max() > 3:
            raise MyErr(int(y.max()))
        return y
    g = C(f)
    try:
        g(torch.tensor([1.0, 5.0]))
    except MyErr as e:
        R((str(e), e.v))
    R(g(torch.tensor([1.0, 1.0])))


@scenario(exact=True)
def stopiteration_in_compiled(C, R):
    def f(x, it):
        a = next(it)
        b = next(it, None)
        return x * a, b
    g = C(f)
    R(g(torch.ones(2), iter([2])))
    R.call(g, torch.ones(2), iter([]))


@scenario(exact=True)
def dict_order_mutation(C, R):
    def f(x, d):
        d["z"] = x.sum()
        d["a"] = 1
        del d["m"]
        d["m"] = 2
        return list(d.keys()), x + len(d)
    g = C(f)
    R(g(torch.ones(2), {"m": 0, "b": 1}))


@scenario(exact=True)
def list_mutation_during_break(C, R):
    def f(x, lst):
        lst.append(x.sum().item())
        lst.sort()
        lst.insert(0, "first")
        print(len(lst))
        lst.pop()
        return x * len(lst)
    g = C(f)
    lst = [5.0, 1.0]
    R(g(torch.ones(2), lst))
    R(list(lst))
    R(g(torch.ones(3), lst))
    R(list(lst))


@scenario(exact=True)
def warnings_in_compiled(C, R):
    import warnings
    def f(x):
        warnings.warn("careful")
        return x * 2
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        R(C(f)(torch.ones(2)))
        R([str(i.message) for i in w])


@scenario(exact=True)
def recursion_compiled(C, R):
    def f(x, n):
        if n == 0:
            return x
        return f(x * 2, n - 1) + 1
    R(C(f)(torch.ones(2), 5))


@scenario(exact=True)
def item_then_python_math(C, R):
    import math
    def f(x):
        v = x.sum().item()
        return math.floor(v / 3), round(v, 1), int(v) % 4, x * math.sqrt(abs(v)), v == int(v)
    g = C(f)
    R(g(torch.tensor([1.25, 2.5])))
    R(g(torch.tensor([-7.0, 0.5])))
