"""Python-level programs around tensor work: iterator classes, user classes with operator
overloads, generators with try/finally, exceptions raised and caught in helpers, recursion with
accumulators, dataclass methods, default mutable args, heapq/bisect/collections, global mutation
ordering with a raise in between."""
import bisect
import collections
import dataclasses
import functools
import heapq
import itertools
import math
import operator

import torch

from probe2 import scenario

LOG = []
STATE = {"n": 0}


class Countdown:
    def __init__(self, t, n):
        self.t, self.n = t, n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        self.t = self.t * 0.5 + self.n
        return self.t


class Seq:
    """iterated through __getitem__ / __len__ only (the old protocol)"""
    def __init__(self, ts):
        self._ts = ts

    def __getitem__(self, i):
        if i >= len(self._ts):
            raise IndexError(i)
        return self._ts[i] * (i + 1)

    def __len__(self):
        return len(self._ts)


class Vec:
    def __init__(self, t):
        self.t = t

    def __add__(self, o):
        return Vec(self.t + (o.t if isinstance(o, Vec) else o))

    __radd__ = __add__

    def __mul__(self, o):
        return Vec(self.t * o)

    def __rmul__(self, o):
        return Vec(o * self.t - 1)

    def __matmul__(self, o):
        return self.t @ o.t

    def __neg__(self):
        return Vec(-self.t)

    def __getitem__(self, i):
        return self.t[i]

    def __len__(self):
        return self.t.shape[0]

    def __bool__(self):
        return self.t.numel() > 0

    def __eq__(self, o):
        return isinstance(o, Vec) and bool((self.t == o.t).all())

    __hash__ = None


@dataclasses.dataclass
class Acc:
    total: torch.Tensor
    steps: int = 0
    hist: list = dataclasses.field(default_factory=list)

    def add(self, v):
        self.total = self.total + v
        self.steps += 1
        self.hist.append(float(v.sum()) if False else self.steps)
        return self

    @property
    def mean(self):
        return self.total / max(self.steps, 1)


@scenario()
def iterator_protocols(C, R):
    def f1(x):
        return sum(Countdown(x, 4))
    def f2(x):
        return [t.sum() for t in Seq([x, x * 2, x - 1])]
    def f3(x):
        out = x
        for i, t in enumerate(Seq([x, x.flip(0)]), start=3):
            out = out + t * i
        return out
    def f4(x):
        it = iter(Countdown(x, 3))
        a = next(it)
        b = next(it)
        rest = list(it)
        return a, b, rest, next(it, None)
    def f5(x):
        return list(itertools.islice(Countdown(x, 10), 2, 5))
    def f6(x):
        return max(Countdown(x.sum(), 5), key=lambda t: -t.abs()), sorted(Seq([x[0], x[1], x[2]]), key=lambda t: float(t))
    def f7(x):
        return list(reversed(Seq([x, -x]))) if hasattr(Seq, "__reversed__") else list(reversed([x, -x]))
    def f8(x):
        return list(zip(Countdown(x, 2), Seq([x, x, x])))
    for f in (f1, f2, f3, f4, f5, f6, f7, f8):
        R.call(C(f), torch.tensor([1.0, -2.0, 3.0]))


@scenario()
def user_class_operators(C, R):
    def f1(x):
        v = Vec(x)
        w = 2 * v + 1 + v * 3
        return w.t, len(w), bool(w), -w[0]
    def f2(x):
        a, b = Vec(x), Vec(x.flip(0))
        return a @ b, (a + b).t, sum([a, b], Vec(torch.zeros(3))).t
    def f3(x):
        return Vec(x) == Vec(x.clone()), Vec(x) == Vec(x + 1), Vec(x) != x
    def f4(x):
        try:
            hash(Vec(x))
        except TypeError as e:
            return "unhashable", x + 1, str(e)[:10]
        return x
    def f5(x):
        return bool(Vec(x[:0])), [t for t in Vec(x)]
    for f in (f1, f2, f3, f4, f5):
        R.call(C(f), torch.tensor([1.0, -2.0, 3.0]))


@scenario()
def generators_try_finally(C, R):
    def gen(x, log):
        try:
            for i in range(3):
                log.append(i)
                yield x * i
        finally:
            log.append("closed")
    def f1(x):
        log = []
        out = [t.sum() for t in gen(x, log)]
        return out, log
    def f2(x):
        log = []
        g = gen(x, log)
        first = next(g)
        g.close()
        return first, log
    def f3(x):
        log = []
        for t in gen(x, log):
            if t.sum() > 1:
                break
        return t, log
    def f4(x):
        log = []
        try:
            for t in gen(x, log):
                if t.sum() > 1:
                    raise ValueError("big")
        except ValueError as e:
            log.append(str(e))
        return log, x * 2
    def f5(x):
        def inner():
            total = yield
            while True:
                v = yield total
                total = total + v
        g = inner()
        next(g)
        g.send(x)
        return g.send(x * 2), g.send(-x)
    def f6(x):
        def sub():
            yield x
            yield x + 1
            return "done"
        def outer():
            r = yield from sub()
            yield r
        return list(outer())
    for f in (f1, f2, f3, f4, f5, f6):
        R.call(C(f), torch.tensor([1.0, 2.0]))


@scenario()
def exceptions_in_helpers(C, R):
    class Bad(Exception):
        pass

    def checked(t):
        if t.shape[0] > 2:
            raise Bad(f"too long {t.shape[0]}")
        return t * 2
    def f1(x):
        outs = []
        for n in (1, 2, 3, 4):
            try:
                outs.append(checked(x[:n]))
            except Bad as e:
                outs.append(str(e))
        return outs
    def f2(x):
        try:
            return x.view(7, 7)
        except RuntimeError:
            return x.reshape(-1, 1)
        finally:
            LOG.append("f2 finally")
    def f3(x):
        try:
            y = x @ x
        except RuntimeError as e:
            y = x * x
            msg = type(e).__name__
        else:
            msg = "no error"
        return y, msg
    def f4(x):
        r = []
        for i in range(3):
            try:
                if i == 1:
                    continue
                r.append(x + i)
            finally:
                r.append(i)
        return r
    def f5(x):
        try:
            try:
                raise KeyError("k")
            except KeyError as e:
                raise ValueError("v") from e
        except ValueError as e:
            return x + 1, type(e.__cause__).__name__, e.__context__ is e.__cause__
    def f6(x):
        d = {}
        try:
            return d["missing"]
        except KeyError:
            return x.sum()
    def f7(x):
        try:
            return int(x)
        except (TypeError, ValueError, RuntimeError) as e:
            return type(e).__name__
    def f8(x):
        try:
            assert x.sum() > 100, "small"
        except AssertionError as e:
            return x - 1, str(e)
    for f in (f1, f2, f3, f4, f5, f6, f7, f8):
        LOG.clear()
        R.call(C(f), torch.tensor([1.0, 2.0, 3.0]))
        R(list(LOG))


@scenario()
def recursion_and_closures(C, R):
    def tree(x, depth, acc):
        if depth == 0:
            acc.append(x.sum())
            return x
        l = tree(x * 0.5, depth - 1, acc)
        r = tree(x.flip(0) + 1, depth - 1, acc)
        return l + r
    def f1(x):
        acc = []
        return tree(x, 3, acc), acc
    def make_counter():
        n = 0
        def inc(t):
            nonlocal n
            n += 1
            return t * n
        return inc
    def f2(x):
        inc = make_counter()
        return inc(x), inc(x), inc(x)
    def f3(x):
        fs = [lambda t, k=k: t + k for k in range(3)]
        gs = [lambda t: t + k for k in range(3)]
        return [f(x) for f in fs], [g(x) for g in gs]
    def f4(x):
        @functools.lru_cache(None)
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)
        return x * fib(10)
    def f5(x):
        def compose(*fs):
            return functools.reduce(lambda f, g: lambda t: g(f(t)), fs)
        return compose(torch.sin, lambda t: t * 2, torch.relu)(x)
    def f6(x, _cache={}):
        _cache[len(_cache)] = x.sum()
        return len(_cache), x + len(_cache)
    def f7(x, acc=[]):
        acc.append(x)
        return torch.stack(acc).sum(0)
    f6c, f7c = C(f6), C(f7)
    for f in (f1, f2, f3, f4, f5):
        R.call(C(f), torch.tensor([1.0, -2.0, 3.0]))
    for i in range(3):
        R.call(f6c, torch.tensor([1.0, float(i)]))
        R.call(f7c, torch.tensor([1.0, float(i)]))


@scenario()
def stdlib_containers(C, R):
    def f1(x):
        h = []
        for i, v in enumerate(x.tolist()):
            heapq.heappush(h, (v, i))
        return [heapq.heappop(h) for _ in range(2)], x[[i for _, i in heapq.nsmallest(2, h)]]
    def f2(x):
        cuts = [0.0, 1.0, 2.5]
        return [bisect.bisect_left(cuts, v) for v in x.tolist()], x * bisect.bisect(cuts, 1.0)
    def f3(x):
        c = collections.Counter(x.long().tolist())
        dq = collections.deque(maxlen=2)
        for t in x:
            dq.append(t * 2)
        od = collections.OrderedDict(a=x, b=x + 1)
        od.move_to_end("a")
        return c.most_common(1), list(dq), list(od.keys()), od["a"]
    def f4(x):
        dd = collections.defaultdict(list)
        for i, t in enumerate(x):
            dd[i % 2].append(t)
        return {k: torch.stack(v).sum() for k, v in dd.items()}
    def f5(x):
        P = collections.namedtuple("P", "a b")
        p = P(x, x * 2)._replace(b=x - 1)
        return p, p._asdict(), operator.itemgetter(1, 0)(p), operator.attrgetter("a")(p)
    def f6(x):
        return math.prod(x.shape) * x, math.isclose(float(x.sum()), 3.0), math.floor(x[0].item() * 1.5), divmod(7, x.shape[0])
    def f7(x):
        return list(itertools.accumulate(x, operator.mul)), list(itertools.pairwise(x.tolist())), list(itertools.chain([x], [x * 2]))
    for f in (f1, f2, f3, f4, f5, f6, f7):
        R.call(C(f), torch.tensor([2.0, 0.5, 1.0, 3.0]))


@scenario()
def dataclass_methods_and_global_order(C, R):
    def f1(x):
        a = Acc(torch.zeros(2))
        for t in x:
            a.add(t)
        return a.mean, a.steps, a.hist, dataclasses.astuple(a)[1:]
    def f2(x, a):
        a.add(x).add(x * 2)
        return a.total
    def f3(x):
        STATE["n"] += 1
        LOG.append(("before", STATE["n"]))
        y = x.sum()
        if y > 0:
            STATE["n"] += 10
            raise RuntimeError("positive")
        LOG.append("after")
        return y
    def f4(x):
        global_list = LOG
        global_list.extend([1, 2])
        y = x.exp()
        global_list.pop(0)
        STATE["last"] = y
        return y
    R.call(C(f1), torch.arange(6.0).reshape(3, 2))
    a = Acc(torch.ones(2), 5)
    R.call(C(f2), torch.tensor([1.0, 2.0]), a)
    R(a)
    g3, g4 = C(f3), C(f4)
    for v in (torch.tensor([-1.0, 0.5]), torch.tensor([1.0, 0.5]), torch.tensor([-3.0, 0.0])):
        LOG.clear()
        STATE.clear()
        STATE["n"] = 0
        R.call(g3, v)
        R.call(g4, v)
        R((list(LOG), dict(STATE)))
