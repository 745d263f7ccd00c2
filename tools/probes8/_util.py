import torch


def each(C, R, fns, xs, star=False):
    """every fn compiled once, called on every input (a tuple of args when star)"""
    import torchc
    for fn in fns:
        torchc.reset()   # lambdas made in a loop share one code object: no recompile limit
        g = C(fn)
        for x in xs:
            if star:
                R.call(g, *x)
            else:
                R.call(g, x)


def layouts(t):
    """t and non-contiguous variants with the same values: transposed copy, sliced, expanded"""
    out = [t]
    if t.dim() >= 2:
        out.append(t.transpose(0, 1).contiguous().transpose(0, 1))
        out.append(torch.cat([t, t], -1)[..., ::2])
    if t.dim() >= 1 and t.shape[0] == 1:
        out.append(t.expand(3, *t.shape[1:]))
    return out
