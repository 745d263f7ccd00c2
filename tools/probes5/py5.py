"""Python-side semantics across graph breaks: print order, exceptions, generators, global
mutation order."""
import torch

from probe2 import scenario

G = {"n": 0}
LOG = []
counter = 0


@scenario(exact=True)
def print_order(C, R):
    def f(x):
        print("a", x.shape)
        y = x * 2
        print("b", y.sum().item())
        z = y + 1
        print("c", int(z[0]))
        return z
    g = C(f)
    R(g(torch.ones(3)))
    R(g(torch.ones(3)))


@scenario(exact=True)
def exceptions_inside(C, R):
    def f(x):
        y = x * 2
        if y.sum() > 3:
            raise ValueError(f"too big {y.shape}")
        return y
    g = C(f)
    R.call(g, torch.ones(1))
    R.call(g, torch.ones(3))
    LOG.clear()
    def h(x):
        try:
            return x.view(5)
        except RuntimeError as e:
            LOG.append(type(e).__name__)
            return x * 3
    R.call(C(h), torch.ones(3))
    def k(x, d):
        return x + d["missing"]
    R.call(C(k), torch.ones(3), {})
    def m(x):
        return x @ x.t() + torch.ones(5, 5)
    R.call(C(m), torch.ones(3, 2))
    def n(x):
        assert x.sum() > 100, "small"
        return x
    R.call(C(n), torch.ones(3))
    def p(x):
        a = [1, 2]
        return x * a[5]
    R.call(C(p), torch.ones(2))
    def q(x):
        return x * (1 / 0)
    R.call(C(q), torch.ones(2))
    def r(x):
        return x.foo
    R.call(C(r), torch.ones(2))
    R(list(LOG))


@scenario(exact=True)
def exception_message(C, R):
    msgs = []
    def f(x, y):
        return x + y
    g = C(f)
    try:
        g(torch.ones(3), torch.ones(4))
    except Exception as e:
        msgs.append((type(e).__name__, "size of tensor a (3)" in str(e)))
    def h(x):
        return x.reshape(7)
    try:
        C(h)(torch.ones(3))
    except Exception as e:
        msgs.append((type(e).__name__, "shape '[7]'" in str(e)))
    def k(x):
        return torch.cat([x, x.int().unsqueeze(0)])
    try:
        C(k)(torch.ones(3))
    except Exception as e:
        msgs.append((type(e).__name__,))
    R(msgs)


@scenario(exact=True)
def generators(C, R):
    def gen(x):
        for i in range(3):
            yield x * i
    def f(x):
        return sum(gen(x)), list(gen(x + 1))
    R(C(f)(torch.ones(2)))
    def h(x):
        it = (x * i for i in range(4))
        a = next(it)
        b = next(it)
        return a + b, list(it)
    R(C(h)(torch.ones(2)))
    def k(x):
        g = gen(x)
        out = []
        for v in g:
            out.append(v)
            if len(out) == 2:
                break
        return out
    R(C(k)(torch.ones(2)))


@scenario(exact=True)
def global_mutation(C, R):
    def f(x):
        global counter
        G["n"] += 1
        LOG.append(("f", G["n"]))
        counter += 1
        y = x * G["n"]
        print("mid", counter)
        LOG.append(("g", counter))
        return y + counter
    g = C(f)
    LOG.clear()
    G["n"] = 0
    global counter
    counter = 0
    R(g(torch.ones(2)))
    R(g(torch.ones(2)))
    R(list(LOG))
    R(dict(G))
    R(counter)


@scenario(exact=True)
def mutation_then_raise(C, R):
    def f(x, lst):
        lst.append(1)
        G["k"] = "set"
        y = x * 2
        if y.shape[0] == 3:
            raise KeyError("k")
        lst.append(2)
        return y
    g = C(f)
    lst = []
    G.pop("k", None)
    R.call(g, torch.ones(3), lst)
    R(list(lst))
    R(G.get("k"))
    R.call(g, torch.ones(2), lst)
    R(list(lst))


@scenario(exact=True)
def mutation_then_torch_error(C, R):
    def f(x, lst, d):
        lst.append("a")
        d["x"] = 1
        y = x.view(-1, 7)
        lst.append("b")
        return y
    g = C(f)
    lst, d = [], {}
    R.call(g, torch.ones(3), lst, d)
    R((list(lst), dict(d)))


@scenario(exact=True)
def attr_mutation_order(C, R):
    class Obj:
        pass
    o = Obj()
    o.a = 0
    def f(x, o):
        o.a += 1
        o.b = o.a * 2
        print("in", o.a, o.b)
        del o.b
        o.c = x.sum().item()
        return x + o.a
    g = C(f)
    R(g(torch.ones(2), o))
    R(vars(o).copy())
    R(g(torch.ones(2), o))
    R(vars(o).copy())


@scenario(exact=True)
def finally_and_with(C, R):
    events = []
    class Ctx:
        def __enter__(self):
            events.append("enter")
            return self
        def __exit__(self, *a):
            events.append(("exit", a[0].__name__ if a[0] else None))
            return False
    def f(x):
        try:
            with Ctx():
                y = x * 2
                events.append("body")
                if y.sum() > 5:
                    raise RuntimeError("big")
                return y
        finally:
            events.append("finally")
    g = C(f)
    R.call(g, torch.ones(2))
    R.call(g, torch.ones(4))
    R(list(events))
