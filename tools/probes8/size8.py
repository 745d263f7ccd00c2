"""Fused programs at sizes around vector widths and thread splits (1..4097, odd, prime),
contiguous / transposed / sliced / channels_last / expanded, float32/float64/half/int/bool:
vector-loop tails, parallel reductions, multi-output kernels, reductions feeding broadcasts."""
import torch
import torch.nn.functional as F

from probe2 import scenario


def _fresh(C, f):
    import torchc
    torchc.reset()   # one code object compiled at many static shapes: no recompile limit
    return C(f)

SIZES = (1, 3, 7, 8, 15, 16, 17, 31, 33, 63, 65, 127, 129, 257, 1000, 4097)


def _v(n, dt=torch.float32, seed=0.37):
    return (torch.arange(float(n)).mul(seed).sin() * 3).to(dt)


def _prog_elementwise(x):
    y = (x * 1.5 - 0.25).sigmoid() * x.tanh() + (x.abs() + 1).log()
    return y, y.relu_() if False else torch.where(x > 0.5, y, -y), (x > 0).to(x.dtype) * 2


def _prog_rows(x):
    m = x.amax(-1, keepdim=True)
    e = (x - m).exp()
    s = e / e.sum(-1, keepdim=True)
    v = x - x.mean(-1, keepdim=True)
    ln = v * (v.pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt()
    return s, ln, x.argmax(-1), x.logsumexp(-1), x.var(-1)


def _prog_cols(x):
    return x.sum(0), x.amin(0), x.argmin(0), x.cumsum(0), x.std(0), x.prod(0).clamp(-1e3, 1e3), x.norm(dim=0)


def _prog_all(x):
    return x.sum(), x.mean(), x.max(), x.argmax(), x.abs().sum(), (x > 0).sum(), (x > 0).all(), (x > 2.9).any()


def _prog_int(x):
    i = (x * 10).to(torch.int32)
    return i.sum(-1), i.amax(0), i.cumsum(-1), (i % 7) * (i // 3), i.abs().argmax(-1), (i & 5) | (i >> 1), (i == 3).sum()


@scenario(rtol=1e-5, atol=1e-5)
def sizes_1d_and_2d_fresh(C, R):
    for prog in (_prog_elementwise, _prog_all, _prog_int):
        for n in SIZES:
            g = _fresh(C, prog)
            R.call(g, _v(n))
            R.call(g, _v(2 * n)[::2])
    for prog in (_prog_rows, _prog_cols, _prog_int):
        for n in (1, 7, 16, 17, 33, 129, 1000):
            for m in (1, 3, 8, 17):
                x = _v(n * m, seed=1.37).reshape(m, n)
                g = _fresh(C, prog)
                R.call(g, x)
                R.call(g, x.T.contiguous().T if m > 1 else x)
                R.call(g, _v(n * m, seed=1.37).reshape(n, m).T)


@scenario(rtol=1e-5, atol=1e-5)
def sizes_dtypes(C, R):
    for dt in (torch.float64, torch.float16, torch.bfloat16):
        for prog in (_prog_elementwise, _prog_rows, _prog_all):
            for n in (7, 16, 33, 257, 1000):
                g = _fresh(C, prog)
                R.call(g, _v(3 * n, dt).reshape(3, n))
                R.call(g, _v(3 * n, dt).reshape(n, 3).T)


@scenario(rtol=1e-5, atol=1e-5)
def sizes_dynamic_reuse(C, R):
    """one compiled function across sizes (dynamic shapes after the second)"""
    for prog in (_prog_elementwise, _prog_rows, _prog_cols, _prog_int, _prog_all):
        g = _fresh(C, prog)
        for n in (5, 6, 17, 1, 64, 65, 1000, 3, 129, 2):
            R.call(g, _v(4 * n).reshape(4, n))


@scenario(rtol=1e-5, atol=1e-5)
def sizes_4d_layouts(C, R):
    def f(x):
        y = F.batch_norm(x, None, None, training=True) * 0.5 + x.mean((2, 3), keepdim=True)
        return y.relu(), y.sum(1), F.gelu(x).amax((1, 3)), (x * x.softmax(1)).sum((0, 2))
    for c in (1, 3, 8, 17, 33):
        for hw in (1, 5, 8, 13):
            x = _v(2 * c * hw * hw).reshape(2, c, hw, hw)
            for v in (x, x.contiguous(memory_format=torch.channels_last), x.permute(0, 1, 3, 2),
                      x[:1].expand(3, c, hw, hw)):
                g = _fresh(C, f)
                R.call(g, v)


@scenario(rtol=1e-5, atol=1e-5)
def sizes_training(C, R):
    def f(x, w):
        h = (x @ w).tanh()
        return (h.softmax(-1) * h).sum(-1).pow(2).mean() + h.amax(0).sum() * 0.1
    for n in (1, 7, 16, 17, 65, 257):
        for k in (1, 8, 33):
            x = _v(n * k).reshape(n, k).requires_grad_()
            w = _v(k * 5, seed=0.11).reshape(k, 5).requires_grad_()
            g = _fresh(C, f)
            out = R.call(g, x, w)
            if out is not None:
                out.backward()
                R((x.grad, w.grad))


@scenario(exact=True)
def sizes_bool_and_select(C, R):
    def f(x):
        m = x > 0
        return m.sum(-1), m.any(0), m.all(-1), torch.where(m, x, 0).amax(-1), x.sort(-1, stable=True)[1], x.topk(min(3, x.shape[-1]), -1)[1]
    for n in (1, 7, 16, 17, 33, 129, 1000, 4097):
        x = _v(3 * n).reshape(3, n).round()
        g = _fresh(C, f)
        R.call(g, x)
        R.call(g, x.T.contiguous().T)
        R.call(g, x.to(torch.int64))
