"""Symbolic shapes: dynamic=True and automatic dynamic (a dim that changes); sizes 0, 1,
odd, large; broadcasting where a symbolic dim becomes 1; size arithmetic in Python."""
import torch

from probe2 import scenario

SIZES = (4, 5, 1, 0, 7, 2, 33, 1, 3)


def _sweep(C, R, f, make, dyn=(True, None)):
    for d in dyn:
        g = C(f, dynamic=d) if d is not None else C(f)
        for n in SIZES:
            R.call(g, *make(n))


@scenario()
def dyn_broadcast_to_one(C, R):
    def f(x, y):
        return x + y, x * y.sum(0, keepdim=True), (x - y).abs().amax(0)
    _sweep(C, R, f, lambda n: (torch.arange(4. * max(n, 1)).reshape(max(n, 1), 4)[:n], torch.ones(3, 4)[:1].expand(n, 4).clone() * 2 if n else torch.ones(0, 4)))
    def h(x, y):
        return x + y
    _sweep(C, R, h, lambda n: (torch.arange(float(n * 3)).reshape(n, 3), torch.arange(float(n)).reshape(n, 1)))
    _sweep(C, R, h, lambda n: (torch.ones(2, 3), torch.arange(float(n * 3)).reshape(n, 3)))


@scenario()
def dyn_reductions(C, R):
    def f(x):
        return x.mean(0), x.var(0), x.std(0, correction=0), x.softmax(0), x.logsumexp(0), x.argmax(0), x.sum(0) / x.shape[0], x.prod(0), x.cumsum(0)[-1:] if x.shape[0] else x
    _sweep(C, R, f, lambda n: (torch.arange(float(n * 3)).reshape(n, 3) / 7 - 1,))


@scenario()
def dyn_size_arith(C, R):
    def f(x):
        n = x.shape[0]
        h = n // 2
        return x[:h] * 2, x[h:], x[n - 1:] if n else x, x.reshape(-1, 1).expand(n, 3), torch.arange(n) * x, x.new_zeros(n + 1), x[-1] if n else x.sum()
    _sweep(C, R, f, lambda n: (torch.arange(float(n)),))


@scenario()
def dyn_view_reshape(C, R):
    def f(x):
        n = x.shape[0]
        a = x.view(n, -1)
        b = x.reshape(-1)
        c = x.transpose(0, 1).contiguous().view(-1)
        d = x.flatten()[:5]
        return a, b, c, d, x.unsqueeze(1).expand(-1, 2, -1).reshape(n * 2, -1)
    _sweep(C, R, f, lambda n: (torch.arange(float(n * 3)).reshape(n, 3),))


@scenario()
def dyn_cat_split(C, R):
    def f(x, y):
        c = torch.cat([x, y], 0)
        parts = c.split(2, 0)
        return c, len(parts), parts[-1], torch.stack([x, x]), c.chunk(3)[0], x.unbind(0)
    _sweep(C, R, f, lambda n: (torch.arange(float(n * 2)).reshape(n, 2), torch.ones(3, 2)))


@scenario()
def dyn_index_ops(C, R):
    def f(x, i):
        return x[i], x.index_select(0, i), x.gather(0, i.unsqueeze(1).expand(-1, x.shape[1])), x[x > 2]
    _sweep(C, R, f, lambda n: (torch.arange(float(max(n, 1) * 2)).reshape(max(n, 1), 2), torch.zeros(n, dtype=torch.long)))


@scenario()
def dyn_matmul_norm(C, R):
    lin = torch.nn.Linear(4, 3)
    ln = torch.nn.LayerNorm(4)
    def f(x):
        return lin(ln(x)), (x @ x.t()).sum(-1), torch.nn.functional.normalize(x, dim=0)
    _sweep(C, R, f, lambda n: (torch.arange(float(n * 4)).reshape(n, 4) / 5,))


@scenario()
def dyn_python_loops_over_size(C, R):
    def f(x):
        out = x.new_zeros(())
        for i in range(x.shape[0]):
            out = out + x[i].sum() * i
        return out, [t.sum() for t in x]
    _sweep(C, R, f, lambda n: (torch.arange(float(n * 2)).reshape(n, 2),), dyn=(None,))


@scenario()
def dyn_two_dims(C, R):
    def f(x):
        return x.sum(1), x.t() @ x, x.mean(), x.view(x.shape[1], x.shape[0]), x.amax()
    g = C(f, dynamic=True)
    for s in ((2, 3), (3, 2), (1, 5), (5, 1), (0, 3), (3, 0), (1, 1), (4, 4), (6, 2)):
        R.call(g, torch.arange(float(s[0] * s[1])).reshape(s))


@scenario()
def dyn_strides_change(C, R):
    def f(x):
        return x * 2, (x * 2).stride(), x.sum(1)
    g = C(f, dynamic=True)
    base = torch.arange(60.).reshape(6, 10)
    for v in (base[:2, :3], base[:3, :4], base.t()[:3, :2], base[::2, ::3], base[:1], base[:, :1], base[:4, :3].t()):
        R.call(g, v)


@scenario()
def dyn_scalar_input(C, R):
    def f(x, s):
        return x * s, x[: int(s)] if isinstance(s, int) else x, torch.full((2,), s)
    g = C(f, dynamic=True)
    for s in (2, 3, 0, 1, 5, 2.5, -1, 7):
        R.call(g, torch.arange(6.), s)
